"""Exports the torchvision model zoo of zoo_test.sh (Debian python3-torch/python3-torchvision,
random weights from a fixed seed, nothing downloaded) and writes, per case, <case>.onnx, its
inputs <case>.<run>.in.npy and PyTorch's outputs <case>.<run>.out.npy into OUTDIR, one line
per run in OUTDIR/runs.txt: `case run static|dynamic`.

Every model is exported twice: with fixed dims (one run) and with dynamic batch and spatial
(or sequence) dims (two runs at different sizes from the same .onnx). Sizes are small (64x64
images, reduced widths where torchvision takes them) so that the zoo runs in minutes on
2 cores. `python3 zoo_models.py OUTDIR [NAME...]` exports only the named models."""
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torchvision.models as tvm
from torchvision.models.convnext import CNBlockConfig, ConvNeXt
from torchvision.models.vision_transformer import VisionTransformer


class Encoder(nn.Module):
    """nn.TransformerEncoder (2 layers, batch first) over [N, T, 32], then a linear head."""

    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(32, 8)

    def forward(self, x):
        return self.head(self.encoder(x))


class Lstm(nn.Module):
    """A 2-layer LSTM (sequence first) over [T, N, 8], then a linear head on every step."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 16, num_layers=2)
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.head(y)


def image(n, size):
    return torch.randn(n, 3, size, size)


# name -> (constructor, fixed input, dynamic inputs (two sizes), dynamic axes of the input)
IMAGE_AXES = {0: "n", 2: "h", 3: "w"}
ZOO = {
    "resnet18": (lambda: tvm.resnet18(num_classes=10), image(1, 64),
                 [image(1, 64), image(2, 48)], IMAGE_AXES),
    "mobilenet_v3_small": (lambda: tvm.mobilenet_v3_small(num_classes=10), image(1, 64),
                           [image(1, 64), image(2, 96)], IMAGE_AXES),
    "efficientnet_b0": (lambda: tvm.efficientnet_b0(num_classes=10), image(1, 64),
                        [image(1, 64), image(2, 32)], IMAGE_AXES),
    "densenet": (lambda: tvm.DenseNet(growth_rate=12, block_config=(2, 3, 4, 3),
                                      num_init_features=16, num_classes=10), image(1, 64),
                 [image(1, 64), image(2, 48)], IMAGE_AXES),
    "shufflenet_v2_x0_5": (lambda: tvm.shufflenet_v2_x0_5(num_classes=10), image(1, 64),
                           [image(1, 64), image(2, 96)], IMAGE_AXES),
    "regnet_y_400mf": (lambda: tvm.regnet_y_400mf(num_classes=10), image(1, 64),
                       [image(1, 64), image(2, 96)], IMAGE_AXES),
    "squeezenet1_1": (lambda: tvm.squeezenet1_1(num_classes=10), image(1, 64),
                      [image(1, 64), image(2, 96)], IMAGE_AXES),
    # ConvNeXt-T's stages (7x7 depthwise, LayerNorm over channels, layer scale) at a sixth of
    # its widths and depths.
    "convnext_narrow": (lambda: ConvNeXt([CNBlockConfig(16, 32, 1), CNBlockConfig(32, 64, 1),
                                          CNBlockConfig(64, 128, 2), CNBlockConfig(128, None, 1)],
                                         num_classes=10), image(1, 64),
                        [image(1, 64), image(2, 96)], IMAGE_AXES),
    # Position embeddings fix the image size: the batch is the dynamic dim.
    "vit": (lambda: VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                                      hidden_dim=32, mlp_dim=64, num_classes=10), image(1, 32),
            [image(1, 32), image(3, 32)], {0: "n"}),
    "transformer_encoder": (Encoder, torch.randn(2, 10, 32),
                            [torch.randn(2, 10, 32), torch.randn(3, 7, 32)], {0: "n", 1: "t"}),
    "lstm": (Lstm, torch.randn(6, 2, 8), [torch.randn(6, 2, 8), torch.randn(9, 3, 8)],
             {0: "t", 1: "n"}),
}


def export(model, name, inputs, axes, out, runs):
    dynamic = axes is not None
    torch.onnx.export(model, inputs[0], os.path.join(out, name + ".onnx"), opset_version=14,
                      input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": axes, "y": {0: "n"}} if dynamic else None)
    for run, x in enumerate(inputs):
        with torch.no_grad():
            y = model(x)
        np.save(os.path.join(out, "%s.%d.in.npy" % (name, run)), x.numpy())
        np.save(os.path.join(out, "%s.%d.out.npy" % (name, run)), y.numpy())
        runs.append("%s %d %s" % (name, run, "dynamic" if dynamic else "static"))


def build(name):
    """The zoo model `name` in eval mode, its weights random from a fixed seed (also what
    bench/zoo/torch_time.py times)."""
    make = ZOO[name][0]
    torch.manual_seed(0)
    model = make().eval()
    with torch.no_grad():
        # torchvision zero-initialises some layers (ViT's head): random values instead,
        # so that every output depends on the whole network.
        for p in model.parameters():
            if p.dim() >= 2 and not p.any():
                p.normal_(0.0, 0.05)
        # BatchNorm statistics away from 0/1, as in a trained model.
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
    return model


def main(out, names):
    runs = []
    for name in names or ZOO:
        _, fixed, dynamic_inputs, axes = ZOO[name]
        model = build(name)
        export(model, name + "_static", [fixed], None, out, runs)
        export(model, name + "_dynamic", dynamic_inputs, axes, out, runs)
    with open(os.path.join(out, "runs.txt"), "w") as f:
        f.write("\n".join(runs) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
