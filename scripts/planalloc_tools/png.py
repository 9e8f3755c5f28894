"""A small raster canvas, written as PNG (RGB, 8 bits) with zlib: the plots need lines,
rectangles and labels, and no plotting library is on the machines planalloc runs on.
decode() reads such a PNG back (the tests check the pixels)."""
import struct
import zlib

# 5x7 glyphs, one string of rows per character ('#': ink); letters are drawn as capitals.
_GLYPHS = {
    "A": ".###.#...##...#######...##...##...#", "B": "####.#...##...#####.#...##...#####.",
    "C": ".###.#...##....#....#....#...#.###.", "D": "####.#...##...##...##...##...#####.",
    "E": "######....#....####.#....#....#####", "F": "######....#....####.#....#....#....",
    "G": ".###.#...##....#.####...##...#.####", "H": "#...##...##...#######...##...##...#",
    "I": ".###...#....#....#....#....#...###.", "J": "..###...#....#....#....#.#..#..##..",
    "K": "#...##..#.#.#..##...#.#..#..#.#...#", "L": "#....#....#....#....#....#....#####",
    "M": "#...###.###.#.##.#.##...##...##...#", "N": "#...##...###..##.#.##..###...##...#",
    "O": ".###.#...##...##...##...##...#.###.", "P": "####.#...##...#####.#....#....#....",
    "Q": ".###.#...##...##...##.#.##..#..##.#", "R": "####.#...##...#####.#.#..#..#.#...#",
    "S": ".#####....#.....###.....#....#####.", "T": "#####..#....#....#....#....#....#..",
    "U": "#...##...##...##...##...##...#.###.", "V": "#...##...##...##...##...#.#.#...#..",
    "W": "#...##...##...##.#.##.#.##.#.#.#.#.", "X": "#...##...#.#.#...#...#.#.#...##...#",
    "Y": "#...##...#.#.#...#....#....#....#..", "Z": "#####....#...#...#...#...#....#####",
    "0": ".###.#...##..###.#.###..##...#.###.", "1": "..#...##....#....#....#....#...###.",
    "2": ".###.#...#....#...#...#...#...#####", "3": "####.....#....#.###.....#....#####.",
    "4": "...#...##..#.#.#..#.#####...#....#.", "5": "######....####.....#....##...#.###.",
    "6": ".###.#....#....####.#...##...#.###.", "7": "#####....#...#...#...#....#....#...",
    "8": ".###.#...##...#.###.#...##...#.###.", "9": ".###.#...##...#.####....#....#.###.",
    " ": "." * 35, ".": "." * 25 + ".##...##..", ",": "." * 20 + ".##....#...#...",
    ":": "......##...##........##...##.......", "%": "##..###..#...#...#...#...#..###..##",
    "-": "...............#####...............", "(": "...#...#...#....#....#.....#.....#.",
    ")": ".#.....#.....#....#....#...#...#...", "/": "....#....#...#...#...#...#....#....",
    "+": "......#....#..#####..#....#........", "=": "..........#####.....#####..........",
    "_": "." * 30 + "#####", "?": ".###.#...#....#...#...#.........#..",
    "x": "..........#...#.#.#...#...#.#.#...#",
}
GLYPH_W, GLYPH_H = 6, 8  # with one column and row of spacing
assert all(len(g) == 35 for g in _GLYPHS.values())


class Canvas:
    def __init__(self, width, height, background=(255, 255, 255)):
        self.width, self.height = width, height
        self.rows = [bytearray(bytes(background) * width) for _ in range(height)]

    def pixel(self, x, y, colour):
        if 0 <= x < self.width and 0 <= y < self.height:
            self.rows[y][3 * x:3 * x + 3] = bytes(colour)

    def get(self, x, y):
        return tuple(self.rows[y][3 * x:3 * x + 3])

    def rect(self, x0, y0, x1, y1, colour):
        """Fills [x0, x1] x [y0, y1], clipped."""
        x0, x1 = max(0, min(x0, x1)), min(self.width - 1, max(x0, x1))
        line = bytes(colour) * (x1 - x0 + 1)
        for y in range(max(0, min(y0, y1)), min(self.height - 1, max(y0, y1)) + 1):
            self.rows[y][3 * x0:3 * x1 + 3] = line

    def hline(self, x0, x1, y, colour, dash=0):
        for x in range(min(x0, x1), max(x0, x1) + 1):
            if not dash or (x // dash) % 2 == 0:
                self.pixel(x, y, colour)

    def vline(self, x, y0, y1, colour, dash=0):
        for y in range(min(y0, y1), max(y0, y1) + 1):
            if not dash or (y // dash) % 2 == 0:
                self.pixel(x, y, colour)

    def text(self, x, y, s, colour=(0, 0, 0)):
        for i, ch in enumerate(s):
            g = _GLYPHS.get(ch) or _GLYPHS.get(ch.upper()) or _GLYPHS["?"]
            for k, c in enumerate(g):
                if c == "#":
                    self.pixel(x + i * GLYPH_W + k % 5, y + k // 5, colour)

    def save(self, path):
        raw = b"".join(b"\0" + bytes(r) for r in self.rows)
        with open(path, "wb") as f:
            f.write(b"\x89PNG\r\n\x1a\n")
            f.write(_chunk(b"IHDR", struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0)))
            f.write(_chunk(b"IDAT", zlib.compress(raw, 6)))
            f.write(_chunk(b"IEND", b""))


def _chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def decode(path):
    """An 8-bit RGB PNG without interlace (what Canvas writes) -> (width, height, rows);
    raises ValueError on anything else, a bad CRC or truncation."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("no PNG signature")
    pos, idat, hdr = 8, b"", None
    while pos < len(data):
        if pos + 8 > len(data):
            raise ValueError("truncated chunk header")
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if len(body) != n or struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])[0] != zlib.crc32(kind + body) & 0xFFFFFFFF:
            raise ValueError("bad or truncated %s chunk" % kind.decode("latin-1"))
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
        pos += 12 + n
    if not hdr or hdr[2:] != (8, 2, 0, 0, 0):
        raise ValueError("not an 8-bit RGB PNG")
    w, h = hdr[0], hdr[1]
    raw = zlib.decompress(idat)
    stride, rows, prev = 3 * w, [], bytearray(3 * w)
    for y in range(h):
        ftype, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if ftype != 0:
            raise ValueError("filter %d (only 0 is written)" % ftype)
        rows.append(line)
        prev = line
    del prev
    return w, h, rows
