"""Plots as SVG: real text that any browser shows and scales, lines and rectangles as
elements, and no plotting library needed on the machines planalloc runs on (it replaced
a hand-written PNG encoder with a 5x7 capitals font). read() parses one back for the
tests: the elements, by kind, with their attributes."""
import xml.etree.ElementTree as ET
from xml.sax.saxutils import escape, quoteattr

NS = "http://www.w3.org/2000/svg"
FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"


def colour(c):
    return "#%02x%02x%02x" % tuple(c)


class Canvas:
    """Pixel coordinates, y down, as the plots compute them; a rectangle covers
    [x0, x1] x [y0, y1] inclusive, as a pixel canvas would."""

    def __init__(self, width, height, title=""):
        self.width, self.height, self.items = width, height, []
        if title:
            self.text(width / 2, 20, title, size=14, anchor="middle", weight="bold")

    def rect(self, x0, y0, x1, y1, fill):
        x, y = min(x0, x1), min(y0, y1)
        self.items.append('<rect x="%d" y="%d" width="%d" height="%d" fill="%s"/>' % (x, y, abs(x1 - x0) + 1, abs(y1 - y0) + 1, colour(fill)))

    def line(self, x0, y0, x1, y1, stroke, dash="", width=1):
        self.items.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="%g"%s/>'
                          % (x0, y0, x1, y1, colour(stroke), width, _dash(dash)))

    def polyline(self, points, stroke, dash="", width=1.5):
        if points:
            pts = " ".join("%d,%d" % p for p in points)
            self.items.append('<polyline points="%s" fill="none" stroke="%s" stroke-width="%g"%s/>' % (pts, colour(stroke), width, _dash(dash)))

    def text(self, x, y, s, size=11, anchor="start", fill=(0, 0, 0), weight="normal", rotate=0):
        turn = ' transform="rotate(%d %g %g)"' % (rotate, x, y) if rotate else ""
        self.items.append('<text x="%g" y="%g" font-family=%s font-size="%d" font-weight="%s" text-anchor="%s" fill="%s"%s>%s</text>'
                          % (x, y, quoteattr(FONT), size, weight, anchor, colour(fill), turn, escape(s)))

    def save(self, path):
        with open(path, "w") as f:
            f.write('<svg xmlns="%s" width="%d" height="%d" viewBox="0 0 %d %d">\n' % (NS, self.width, self.height, self.width, self.height))
            f.write('<rect width="100%" height="100%" fill="#ffffff"/>\n')
            f.write("\n".join(self.items))
            f.write("\n</svg>\n")


def _dash(dash):
    return ' stroke-dasharray="%s"' % dash if dash else ""


def read(path):
    """{kind: [attributes, ...]} of an SVG this module wrote (text elements carry their
    string as "text"); raises ValueError on anything that is not SVG."""
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        raise ValueError(str(e))
    if root.tag != "{%s}svg" % NS:
        raise ValueError("the root is %s, not svg" % root.tag)
    out = {"svg": [dict(root.attrib)]}
    for el in root:
        a = dict(el.attrib)
        if el.tag.endswith("text"):
            a["text"] = el.text or ""
        out.setdefault(el.tag.split("}")[-1], []).append(a)
    return out
