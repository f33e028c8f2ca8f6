"""The naming rule of docs/naming.md (src/mount/wf_tree.h) reimplemented: escaped
components, the split of long names into directories, expected paths.
"""



# ---------------------------------------------------------------- naming model
# The mapping of docs/naming.md / src/mount/wf_tree.h, reimplemented.

def utf8_len(s, i):
    """Length of the valid UTF-8 sequence at s[i] (a byte >= 0x80), else 0."""
    c = s[i]
    if 0xC2 <= c <= 0xDF:
        n = 2
    elif 0xE0 <= c <= 0xEF:
        n = 3
    elif 0xF0 <= c <= 0xF4:
        n = 4
    else:
        return 0
    try:
        s[i:i + n].decode("utf-8", "strict")
    except UnicodeDecodeError:
        return 0
    return n if len(s[i:i + n]) == n else 0


def fnv1a64(b):
    h = 1469598103934665603
    for c in b:
        h = ((h ^ c) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def escape_component(s, limit=255):
    if s == b"":
        return b"%"
    if s == b".":
        return b"%2E"
    if s == b"..":
        return b"%2E%2E"
    out = bytearray()
    bounds = [0]  # offsets in out where a whole character / escape ends
    i = 0
    while i < len(s) and len(out) <= limit:  # past the limit only the hash matters
        c = s[i]
        n = utf8_len(s, i) if c >= 0x80 else 1
        if c in b"%/." or c < 0x20 or c == 0x7F or n == 0:
            out += b"%%%02X" % c
            i += 1
        else:
            out += s[i:i + n]
            i += n
        bounds.append(len(out))
    if len(out) <= limit:
        return bytes(out)
    keep = max(b for b in bounds if b <= 200)
    return bytes(out[:keep]) + b"%%~%016x" % fnv1a64(s)


# rule 8: deep and long names (src/mount/wf_tree.h)
TREE_MAX_DIRS = 31
TREE_DIR_BYTES = 768
TREE_DIR_FLOOR = 65536
TREE_DIR_HEADER_DIV = 32


def split_name(n, max_dirs):
    """(directory components, file component, raw bytes it was made from)."""
    dirs, frm, used = [], 0, 0
    while len(dirs) < max_dirs:
        dot = n.find(b".", frm)
        if dot < 0:
            break
        e = escape_component(n[frm:dot])
        if used + len(e) + 1 > TREE_DIR_BYTES:
            break
        used += len(e) + 1
        dirs.append(e)
        frm = dot + 1
    return dirs, escape_component(n[frm:]), n[frm:]


def expected_paths(names, header=0):
    """names: list of bytes in model order -> list of path bytes.  header:
    the model's header bytes (data offset), which pays for directories."""
    def all_dirs(max_dirs):
        dirs = set()
        for n in names:
            ds = split_name(n, max_dirs)[0]
            for k in range(1, len(ds) + 1):
                dirs.add(tuple(ds[:k]))
        return dirs
    max_dirs = TREE_MAX_DIRS
    dirs = all_dirs(max_dirs)
    budget = max(TREE_DIR_FLOOR, header // TREE_DIR_HEADER_DIV)
    if len(dirs) > budget:
        per = [0] * (TREE_MAX_DIRS + 2)
        for d in dirs:
            per[len(d)] += 1
        total, max_dirs = 0, 0
        while max_dirs < TREE_MAX_DIRS and total + per[max_dirs + 1] <= budget:
            max_dirs += 1
            total += per[max_dirs]
        dirs = all_dirs(max_dirs)
    taken = {(): set()}
    for d in dirs:
        taken.setdefault(d[:-1], set()).add(d[-1])
    taken.setdefault((), set()).update({b"metadata.json", b"tensors.json"})
    out = []
    for n in names:
        ds, leaf, tail = split_name(n, max_dirs)
        parent = tuple(ds)
        # rule 5: shortened first so that the suffix still fits in 255 bytes
        base = (escape_component(tail, 255 - len(b".tensor")) + b".tensor"
                if parent + (leaf,) in dirs else leaf)
        name, dup = base, 2
        t = taken.setdefault(parent, set())
        while name in t:
            name = base + b"~%d" % dup
            dup += 1
        t.add(name)
        out.append(b"/".join(parent + (name,)))
    return out
