#!/usr/bin/env python3
"""Prints the executables of a .vmfb (vm/module.fbs) for FileCheck tests.

For each executable: format, entry points, attrs, and its binary: "ELF e_machine=N" for an
ELF file (190 = EM_CUDA), else the first line. An attr naming a rodata ordinal
(cuda.ptx_segment) is followed by that segment's text, so PTX can be checked directly;
multi-line attr values (cuda.ptx) are summarized.
A tiny FlatBuffers reader; no dependencies.
"""
import struct
import sys


class Table:
    def __init__(self, buf, pos):
        self.buf, self.pos = buf, pos
        vt = pos - struct.unpack_from("<i", buf, pos)[0]
        self.vt_len = struct.unpack_from("<H", buf, vt)[0]
        self.vt = vt

    def _field(self, index):
        off = 4 + 2 * index
        if off >= self.vt_len:
            return None
        rel = struct.unpack_from("<H", self.buf, self.vt + off)[0]
        return self.pos + rel if rel else None

    def scalar(self, index, fmt, default=0):
        p = self._field(index)
        return default if p is None else struct.unpack_from(fmt, self.buf, p)[0]

    def _indirect(self, p):
        return p + struct.unpack_from("<I", self.buf, p)[0]

    def string(self, index):
        p = self._field(index)
        if p is None:
            return None
        s = self._indirect(p)
        n = struct.unpack_from("<I", self.buf, s)[0]
        return self.buf[s + 4:s + 4 + n].decode()

    def vector(self, index):
        p = self._field(index)
        if p is None:
            return 0, 0
        v = self._indirect(p)
        return v + 4, struct.unpack_from("<I", self.buf, v)[0]

    def tables(self, index):
        start, n = self.vector(index)
        return [Table(self.buf, self._indirect(start + 4 * i)) for i in range(n)]

    def strings(self, index):
        start, n = self.vector(index)
        out = []
        for i in range(n):
            s = self._indirect(start + 4 * i)
            m = struct.unpack_from("<I", self.buf, s)[0]
            out.append(self.buf[s + 4:s + 4 + m].decode())
        return out


def main(path):
    data = open(path, "rb").read()
    assert data[:8] == b"HXIRVMFB", "not a .vmfb"
    fb = data[24:24 + struct.unpack_from("<I", data, 12)[0]]  # 24-byte header (vm/module_header.h)
    module = Table(fb, struct.unpack_from("<I", fb, 0)[0])
    seg_start, seg_n = module.vector(8)
    segments = [struct.unpack_from("<QQ", fb, seg_start + 24 * i) for i in range(seg_n)]  # offset, length, checksum
    rod_start, rod_n = module.vector(7)
    rodata = [struct.unpack_from("<I", fb, rod_start + 4 * i)[0] for i in range(rod_n)]

    def segment(i):
        offset, length = segments[i]
        return data[offset:offset + length]

    for i, exe in enumerate(module.tables(9)):
        print("executable %d format=%s entry_points=%s" % (i, exe.string(0), ",".join(exe.strings(2))))
        binary = segment(exe.scalar(1, "<I"))
        if binary[:4] == b"\x7fELF":
            print("  binary: ELF e_machine=%d size>0=%s" % (struct.unpack_from("<H", binary, 18)[0], len(binary) > 0))
        else:
            print("  binary: " + binary.split(b"\n", 1)[0].decode(errors="replace"))
        attrs = {}
        for attr in exe.tables(3):
            key, value = attr.string(0), attr.string(1)
            attrs[key] = value
            if "\n" in value:
                print("  attr %s = <text, %d lines>" % (key, value.count("\n")))
            else:
                print("  attr %s = %s" % (key, value))
        if "cuda.ptx_segment" in attrs:
            text = segment(rodata[int(attrs["cuda.ptx_segment"])]).rstrip(b"\0").decode()
            if "cuda.ptx" in attrs:
                print("  cuda.ptx equals the cuda.ptx_segment text: %s" % (attrs["cuda.ptx"] == text))
            print("  ptx:")
            for line in text.splitlines():
                print("    " + line)


if __name__ == "__main__":
    main(sys.argv[1])
