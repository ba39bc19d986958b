"""Per-convolution-kind time and GFLOP/s of hexir-bench reports (bench/README.md, "CPU
networks against onnxruntime"):

  python3 bench/zoo/conv_kinds.py DUMP REPORT[,REPORT...] ...

DUMP: `hexir-compile MODEL.mlir --target=cpu -o /dev/null
--dump-after=hexir-outline-dispatch-regions 2> DUMP` (names each dispatch's convolution:
depthwise, 1x1, KxK, strided KxK). Each argument after it is one module's reports, comma
separated (runs of the same module): a dispatch counts at its least time over them, so
modules timed alternately on a loaded machine compare at their least disturbed runs."""
import re
import sys

CONV = re.compile(
    r'linalg\.generic \{indexing_maps = \[(#map\d*), #map\d*, #map\d*\], iterator_types = '
    r'\["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"\]\} '
    r'ins\([^:]*: tensor<[^>]*>, tensor<(\d+)x(\d+)x(\d+)x(\d+)xf32>')
ROW = re.compile(r'\s+(\w+)\s+(\d+)\s+([\d.]+) (us|ms)\s+[\d.]+\s+\d+\s+\d+\s+([\de.+-]+)')


def kinds(dump):
    text = open(dump).read()
    maps = dict(re.findall(r'^(#map\d*) = affine_map<(.*)>$', text, re.M))
    out = {}
    for part in re.split(r'\n  hexir\.executable @', text)[1:]:
        conv = CONV.search(part)
        if not conv:
            continue
        x = maps.get(conv.group(1), '').split('->')[1]
        kh, kw = int(conv.group(4)), int(conv.group(5))
        if 'd1' in x.split(',')[1]:
            kind = 'depthwise %dx%d' % (kh, kw)
        else:
            kind = ('strided ' if '* 2' in x else '') + '%dx%d' % (kh, kw)
        out[part.split(' ', 1)[0]] = kind
    return out


def module(reports, kind):
    best, walls = {}, []
    for report in reports.split(','):
        text = open(report).read()
        walls.append(float(re.search(r'wall \(invoke \+ wait idle\): ([\d.]+) us', text).group(1)))
        for line in text.splitlines():
            row = ROW.match(line)
            if not row or row.group(1) not in kind:
                continue
            us = float(row.group(3)) * (1000 if row.group(4) == 'ms' else 1)
            n, gflop = int(row.group(2)), float(row.group(5))
            if row.group(1) not in best or n * us < best[row.group(1)][0]:
                best[row.group(1)] = (n * us, n * gflop)
    total = {}
    for name, (us, gflop) in best.items():
        t = total.setdefault(kind[name], [0.0, 0.0])
        t[0] += us
        t[1] += gflop
    cells = ['%s %.0f us %.1f GFLOP/s' % (k, us, gflop / us * 1e6) for k, (us, gflop) in sorted(total.items())]
    print('%s: wall %.2f ms (least); %s' % (reports, min(walls) / 1000, '; '.join(cells)))


if __name__ == '__main__':
    names = kinds(sys.argv[1])
    for arg in sys.argv[2:]:
        module(arg, names)
