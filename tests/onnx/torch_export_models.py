"""Exports the small PyTorch models of torch_export_test.sh (random weights, fixed seed) and
writes, per case, <case>.onnx, its inputs <case>.<run>.in.npy and PyTorch's outputs
<case>.<run>.out.npy into OUTDIR, one line per run in OUTDIR/runs.txt: `case run static|dynamic`.

The models hold what torch.onnx.export emits for shapes computed with Equal/Where/Mod on
constants and on Shape outputs: a ViT class token expanded to the batch, a Swin window
partition padded up to a multiple of the window size."""
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class VitBlock(nn.Module):
    """Patch embedding, a class token expanded to the batch, one encoder layer, a head."""

    def __init__(self):
        super().__init__()
        self.patch = nn.Conv2d(3, 8, 4, 4)
        self.cls = nn.Parameter(torch.randn(1, 1, 8))
        self.pos = nn.Parameter(torch.randn(1, 17, 8))
        self.enc = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
        self.head = nn.Linear(8, 5)

    def forward(self, x):
        y = self.patch(x).flatten(2).transpose(1, 2)
        c = self.cls.expand(x.shape[0], -1, -1)
        y = torch.cat([c, y], 1) + self.pos
        return self.head(self.enc(y)[:, 0])


class SwinWindows(nn.Module):
    """Pads H and W up to a multiple of the window (amounts from Mod), shifts the windows
    cyclically (torch.roll: open slices `x[s:]` to INT64_MAX), partitions windows."""

    def __init__(self, window=4):
        super().__init__()
        self.window = window
        self.proj = nn.Linear(6, 6)

    def forward(self, x):  # B, H, W, C
        b, h, w, c = x.shape
        ws = self.window
        x = F.pad(x, (0, 0, 0, (ws - w % ws) % ws, 0, (ws - h % ws) % ws))
        _, ph, pw, _ = x.shape
        x = torch.roll(x, shifts=(-(ws // 2), -(ws // 2)), dims=(1, 2))
        x = x.view(b, ph // ws, ws, pw // ws, ws, c).permute(0, 1, 3, 2, 4, 5)
        return self.proj(x.reshape(b, -1, ws * ws, c))


class RunTimeShapes(nn.Module):
    """Shapes from the spatial dims at run time: Resize by scale (bilinear, cubic) and to a
    computed size (nearest), Range over the width, a Slice to half the height, a Tile, a
    ConstantOfShape, a Pad by amounts computed from the dims, a Reshape to computed dims."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3, padding=1)

    def forward(self, x):  # N, 2, H, W
        n, _, h, w = x.shape
        y = self.conv(x)
        up = F.interpolate(y, scale_factor=2.0, mode="bilinear", align_corners=False)
        cubic = F.interpolate(y, scale_factor=2.0, mode="bicubic", align_corners=False)
        back = F.interpolate(up + cubic, size=(h, w), mode="nearest")
        pos = torch.arange(w, dtype=torch.float32) * 0.1
        top = back[:, :, : h // 2] + pos
        tiled = top.repeat(1, 1, 2, 1)
        tiled = tiled + torch.zeros(n, 3, tiled.shape[2], w)
        padded = F.pad(tiled, (0, w % 3, 1, 0))
        return padded.reshape(n, 3, -1)


class Recurrent(nn.Module):
    """A 2-layer bidirectional batch-first LSTM, then a GRU over its outputs (LSTM, GRU)."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 6, num_layers=2, batch_first=True, bidirectional=True)
        self.gru = nn.GRU(12, 5, batch_first=True)

    def forward(self, x):  # N, T, 4
        y, _ = self.lstm(x)
        z, h = self.gru(y)
        return z + h.transpose(0, 1)


class Positives(nn.Module):
    """torch.nonzero: an output extent computed from the data (NonZero)."""

    def forward(self, x):
        return torch.nonzero(x > 0.5)


class FeatureScale(nn.Module):
    """Per-feature scale and shift of [N, F] with F a dynamic axis: a run-time F of 1 meets the
    parameters' static 4 and broadcasts (ONNX's rule, as PyTorch does)."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(4))
        self.shift = nn.Parameter(torch.randn(4))

    def forward(self, x):  # N, F
        return torch.tanh(x * self.scale + self.shift)


def export(model, name, inputs, dynamic, out, runs, axes=(0,)):
    dims = {a: "d%d" % a for a in axes}
    torch.onnx.export(model, inputs[0], os.path.join(out, name + ".onnx"), opset_version=14,
                      input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": dims} if dynamic else None)
    for run, x in enumerate(inputs):
        with torch.no_grad():
            y = model(x)
        np.save(os.path.join(out, "%s.%d.in.npy" % (name, run)), x.numpy())
        np.save(os.path.join(out, "%s.%d.out.npy" % (name, run)), y.numpy())
        runs.append("%s %d %s" % (name, run, "dynamic" if dynamic else "static"))


def main(out):
    torch.manual_seed(0)
    runs = []
    vit = VitBlock().eval()
    swin = SwinWindows().eval()
    export(vit, "vit_static", [torch.randn(2, 3, 16, 16)], False, out, runs)
    export(vit, "vit_dynamic_batch", [torch.randn(2, 3, 16, 16), torch.randn(3, 3, 16, 16)], True,
           out, runs)
    export(swin, "swin_static", [torch.randn(2, 6, 7, 6)], False, out, runs)
    export(swin, "swin_dynamic_batch", [torch.randn(1, 6, 7, 6), torch.randn(3, 6, 7, 6)], True,
           out, runs)
    export(swin, "swin_dynamic_spatial", [torch.randn(2, 6, 7, 6), torch.randn(1, 9, 5, 6)], True,
           out, runs, axes=(0, 1, 2))
    export(RunTimeShapes().eval(), "runtime_shapes", [torch.randn(1, 2, 6, 7), torch.randn(2, 2, 9, 5)],
           True, out, runs, axes=(0, 2, 3))
    export(Recurrent().eval(), "lstm_gru", [torch.randn(2, 5, 4), torch.randn(3, 7, 4)], True, out, runs,
           axes=(0, 1))
    export(Positives().eval(), "nonzero", [torch.rand(3, 5), torch.rand(4, 2)], True, out, runs,
           axes=(0, 1))
    export(FeatureScale().eval(), "feature_scale", [torch.randn(2, 4), torch.randn(3, 1)], True, out,
           runs, axes=(0, 1))
    with open(os.path.join(out, "runs.txt"), "w") as f:
        f.write("\n".join(runs) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
