"""What an online best-fit allocator (a caching allocator's policy) would have needed for
the recorded trace: the buffers replayed in event order, each into the smallest free
block that fits, else on top; the high-water mark is what it reserves, since such an
allocator keeps what it reserved."""
import bisect


def high_water(rows):
    """Trace rows (lower, upper, size) -> list of (event, high-water bytes) at each rise."""
    events = []
    for i, r in enumerate(rows):
        events.append((r["upper"], 0, i))  # frees first: [lower, upper) is half-open
        events.append((r["lower"], 1, i))
    events.sort()
    starts, sizes = [], []  # free blocks by offset
    at, top, rises = {}, 0, []
    for t, is_alloc, i in events:
        size = rows[i]["size"]
        if is_alloc:
            off, top = _take(starts, sizes, size, top)
            at[i] = off
            if not rises or rises[-1][1] != top:
                rises.append((t, top))
        elif i in at:
            _give(starts, sizes, at.pop(i), size)
    return rises


def _take(starts, sizes, size, top):
    best = None
    for k, s in enumerate(sizes):
        if s >= size and (best is None or s < sizes[best]):
            best = k
    if best is None:
        if starts and starts[-1] + sizes[-1] == top:  # the free block at the top grows
            off = starts.pop()
            sizes.pop()
            return off, off + size
        return top, top + size
    off = starts[best]
    if sizes[best] == size:
        del starts[best], sizes[best]
    else:
        starts[best] += size
        sizes[best] -= size
    return off, top


def _give(starts, sizes, off, size):
    k = bisect.bisect_left(starts, off)
    starts.insert(k, off)
    sizes.insert(k, size)
    if k + 1 < len(starts) and starts[k] + sizes[k] == starts[k + 1]:
        sizes[k] += sizes[k + 1]
        del starts[k + 1], sizes[k + 1]
    if k > 0 and starts[k - 1] + sizes[k - 1] == starts[k]:
        sizes[k - 1] += sizes[k]
        del starts[k], sizes[k]
