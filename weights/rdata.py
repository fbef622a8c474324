"""Read the data sets of an installed R package (its lazy-load database, data/Rdata.rdx and
Rdata.rdb) without R: enough of R's XDR serialization format for vectors, lists and attributes.
Used by train.py to read Jane Austen's novels from Debian's r-cran-janeaustenr."""
import gzip
import os
import struct
import zlib

NIL, SYM, LIST, CHAR, LGL, INT, REAL, STR, VEC = 254, 1, 2, 9, 10, 13, 14, 16, 19
SPECIAL_NILS = {242, 241, 253, 252, 251, 247}  # environments and markers: read as None


class Reader:
    def __init__(self, data):
        self.data, self.pos, self.refs = data, 0, []

    def take(self, n):
        chunk = self.data[self.pos:self.pos + n]
        if len(chunk) != n:
            raise ValueError("truncated R serialization")
        self.pos += n
        return chunk

    def int(self):
        return struct.unpack(">i", self.take(4))[0]

    def header(self):
        if self.take(2) != b"X\n":
            raise ValueError("not an XDR R serialization")
        version = self.int()
        self.int(), self.int()  # writer and minimal reader versions
        if version == 3:
            self.take(self.int())  # native encoding name

    def item(self):
        flags = self.int()
        kind, has_attr, has_tag = flags & 0xFF, flags & (1 << 9), flags & (1 << 10)
        if kind == NIL or kind in SPECIAL_NILS:
            return None
        if kind == 255:  # a reference to an earlier symbol or environment
            index = flags >> 8 or self.int()
            return self.refs[index - 1]
        if kind == SYM:
            name = self.item()
            self.refs.append(name)
            return name
        if kind == LIST:  # a pairlist: returned as a dict when tagged
            out = {}
            while kind == LIST:
                attr = self.item() if has_attr else None
                tag = self.item() if has_tag else len(out)
                out[tag] = self.item()
                del attr
                flags = self.int()
                kind, has_attr, has_tag = flags & 0xFF, flags & (1 << 9), flags & (1 << 10)
            if kind != NIL:
                raise ValueError(f"unexpected pairlist end {kind}")
            return out
        if kind == CHAR:
            n = self.int()
            return None if n == -1 else self.take(n).decode("utf-8", errors="replace")
        if kind in (LGL, INT):
            n = self.int()
            value = list(struct.unpack(f">{n}i", self.take(4 * n)))
        elif kind == REAL:
            n = self.int()
            value = list(struct.unpack(f">{n}d", self.take(8 * n)))
        elif kind in (STR, VEC):
            value = [self.item() for _ in range(self.int())]
        else:
            raise ValueError(f"R type {kind} is not supported")
        if has_attr:
            attrs = self.item()
            if isinstance(attrs, dict) and "names" in attrs and kind == VEC:
                return dict(zip(attrs["names"], value))
        return value


def unserialize(data):
    r = Reader(data)
    r.header()
    return r.item()


def load_package_data(package_dir):
    """{name: value} of every data set in an installed R package's data/Rdata.* database."""
    base = os.path.join(package_dir, "data", "Rdata")
    with gzip.open(base + ".rdx") as f:
        index = unserialize(f.read())
    with open(base + ".rdb", "rb") as f:
        rdb = f.read()
    out = {}
    for name, (offset, length) in index["variables"].items():
        blob = rdb[offset:offset + length]
        size = struct.unpack(">I", blob[:4])[0]
        raw = zlib.decompress(blob[4:])
        if len(raw) != size:
            raise ValueError(f"{name}: expected {size} bytes, got {len(raw)}")
        out[name] = unserialize(raw)
    return out


if __name__ == "__main__":
    data = load_package_data("/usr/lib/R/site-library/janeaustenr")
    for k, v in data.items():
        print(k, type(v).__name__, len(v), repr(v[:3]) if isinstance(v, list) else list(v)[:3])
