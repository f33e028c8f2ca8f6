#!/usr/bin/env python3
"""make layers-check: the layout rules of docs/design.md, checked.

1. Layers: src/ has one folder per layer, lowest first (LAYERS below).  A
   file includes headers of its own folder and of folders below it, never
   above: '#include "view/wf_live.h"' in src/model/ is an error.
2. No include cycle between modules (a module is X.c with its X.h).
3. No function longer than MAX_LINES lines (generated tables excepted).
4. The Makefile names every .c under src/ (no wildcard can pick up a file
   nobody meant to build) and names no file that is missing.

Exits 1 with one line per problem, 0 when the tree keeps every rule.
"""
import os
import re
import sys

LAYERS = ["base", "codec", "model", "view", "lib", "mount", "cli", "fuse"]
MAX_LINES = 80
GENERATED = {"src/codec/wf_iq_tables.c"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# a function definition starts at column 0 with its return type and ends
# at the first '}' in column 0 after it
FUNC_START = re.compile(r"^(?!static\s+const\b)(?:static\s+|inline\s+|WEIGHTFS_API\s+)*"
                        r"[A-Za-z_][\w \*]*\b(\w+)\([^;]*$")


def sources(root):
    out = []
    for dp, _, fn in os.walk(os.path.join(root, "src")):
        for f in fn:
            if f.endswith((".c", ".h")):
                out.append(os.path.relpath(os.path.join(dp, f), root))
    return sorted(out)


def layer_of(path):
    parts = path.split("/")
    return parts[1] if len(parts) > 2 else None


def check_layers(root, files, problems):
    graph = {}
    for f in files:
        mine = layer_of(f)
        if mine not in LAYERS:
            problems.append("%s: not in a layer folder (%s)" % (f, ", ".join(LAYERS)))
            continue
        text = open(os.path.join(root, f), encoding="utf-8").read()
        mod = os.path.splitext(f)[0]
        for inc in INCLUDE.findall(text):
            if "/" not in inc:
                problems.append("%s: #include \"%s\" names no folder" % (f, inc))
                continue
            theirs = inc.split("/")[0]
            if theirs not in LAYERS:
                problems.append("%s: #include \"%s\": no such layer" % (f, inc))
            elif LAYERS.index(theirs) > LAYERS.index(mine):
                problems.append("%s: #include \"%s\": %s is above %s" % (f, inc, theirs, mine))
            if not os.path.exists(os.path.join(root, "src", inc)):
                problems.append("%s: #include \"%s\": no such file" % (f, inc))
            dep = "src/" + os.path.splitext(inc)[0]
            if dep != mod:
                graph.setdefault(mod, set()).add(dep)
    return graph


def check_cycles(graph, problems):
    state = {}

    def visit(n, stack):
        state[n] = 1
        stack.append(n)
        for d in sorted(graph.get(n, ())):
            if state.get(d) == 1:
                cyc = stack[stack.index(d):] + [d]
                problems.append("include cycle: " + " -> ".join(cyc))
            elif d not in state:
                visit(d, stack)
        stack.pop()
        state[n] = 2

    for n in sorted(graph):
        if n not in state:
            visit(n, [])


def check_lengths(root, files, problems):
    for f in files:
        if not f.endswith(".c") or f in GENERATED:
            continue
        lines = open(os.path.join(root, f), encoding="utf-8").read().split("\n")
        name, start = None, 0
        for i, line in enumerate(lines):
            if name is None:
                m = FUNC_START.match(line)
                if m and not line.startswith(("typedef", "struct", "enum", "union", "#")):
                    name, start = m.group(1), i
            elif line.startswith("}"):
                if i - start + 1 > MAX_LINES:
                    problems.append("%s:%d: %s() is %d lines, more than %d" %
                                    (f, start + 1, name, i - start + 1, MAX_LINES))
                name = None
            elif line.endswith(";") and not line.startswith((" ", "\t", "{")):
                name = None  # a prototype split over lines


def check_makefile(root, files, problems):
    text = open(os.path.join(root, "Makefile"), encoding="utf-8").read()
    if re.search(r"wildcard\s+src/", text):
        problems.append("Makefile: lists src/ by wildcard; name each source")
    named = set(re.findall(r"\bsrc/[\w/]+\.c\b", text))
    for f in files:
        if f.endswith(".c") and f not in named:
            problems.append("Makefile: %s is not in any *_SRC list" % f)
    for f in sorted(named):
        if not os.path.exists(os.path.join(root, f)):
            problems.append("Makefile: %s does not exist" % f)


def self_test():
    """Each rule must catch what it is for: a tree with one fault of each
    kind must give each line, or the check itself is broken."""
    import tempfile
    with tempfile.TemporaryDirectory() as root:
        def put(path, text):
            os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
            with open(os.path.join(root, path), "w") as f:
                f.write(text)
        put("src/base/a.h", '#include "view/v.h"\n')
        put("src/view/v.h", "")
        put("src/model/m.c", '#include "model/n.h"\n')
        put("src/model/n.h", '#include "model/m.h"\n')
        put("src/model/m.h", '#include "model/n.h"\n')
        put("src/codec/long.c", "int f(void)\n{\n" + "\tx();\n" * 85 + "}\n")
        put("Makefile", "SRC := src/codec/long.c src/codec/gone.c\n")
        files = sources(root)
        problems = []
        check_cycles(check_layers(root, files, problems), problems)
        check_lengths(root, files, problems)
        check_makefile(root, files, problems)
        want = ["view is above base", "include cycle", "f() is 88 lines", "src/model/m.c is not in",
                "src/codec/gone.c does not exist"]
        missed = [w for w in want if not any(w in p for p in problems)]
        if missed:
            print("layers-check: self-test: not caught: " + "; ".join(missed))
            return 1
    return 0


def main(argv):
    if self_test() != 0:
        return 1
    root = argv[1] if len(argv) > 1 else "."
    files = sources(root)
    problems = []
    graph = check_layers(root, files, problems)
    check_cycles(graph, problems)
    check_lengths(root, files, problems)
    check_makefile(root, files, problems)
    for p in problems:
        print("layers-check: " + p)
    if problems:
        return 1
    print("layers-check: %d files in %d layers (%s), no upward include, no cycle, "
          "no function over %d lines" % (len(files), len(LAYERS), " < ".join(LAYERS), MAX_LINES))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
