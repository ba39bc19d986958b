"""Minimal .npy reading/writing without numpy (the GPU machine's python may lack it).

write(path, shape, dtype, values) with dtype in f2 f4 i4 i8 (little endian);
read(path) -> (shape, dtype, list of values).
"""
import ast
import struct

_FMT = {"f2": "e", "f4": "f", "i4": "i", "i8": "q"}


def write(path, shape, dtype, values):
    header = "{'descr': '<%s', 'fortran_order': False, 'shape': (%s), }" % (
        dtype, "".join("%d, " % d for d in shape) if len(shape) != 1 else "%d," % shape[0])
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%d%s" % (len(values), _FMT[dtype]), *values))


def read(path):
    data = open(path, "rb").read()
    assert data[:6] == b"\x93NUMPY", path
    major = data[6]
    if major == 1:
        n = struct.unpack_from("<H", data, 8)[0]
        start = 10
    else:
        n = struct.unpack_from("<I", data, 8)[0]
        start = 12
    header = ast.literal_eval(data[start:start + n].decode())
    dtype = header["descr"].lstrip("<|=")
    shape = tuple(header["shape"])
    body = data[start + n:]
    count = len(body) // struct.calcsize(_FMT[dtype])
    return shape, dtype, list(struct.unpack("<%d%s" % (count, _FMT[dtype]), body[:count * struct.calcsize(_FMT[dtype])]))
