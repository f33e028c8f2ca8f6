#!/usr/bin/env python3
"""make layers-check: the layout rules of docs/design.md, checked.

1. Layers: src/ has one folder per layer, lowest first (LAYERS below).  A
   file includes headers of its own folder and of folders below it, never
   above: '#include "view/wf_live.h"' in src/model/ is an error.
2. No include cycle between modules (a module is X.c with its X.h).
3. No function longer than MAX_LINES lines (generated tables excepted).
4. The Makefile names every .c under src/ (no wildcard can pick up a file
   nobody meant to build) and names no file that is missing.
5. With the build's object folder (make layers-check passes it): who calls
   whom, file by file, from the symbols each object defines and uses
   (nm), whether or not the callee has a header of its own.  A layer calls
   only the layers design.md's "may call" column gives it (MAY; includes
   are held to the same table), and no two files call each other, however
   indirectly, except the cycles KNOWN_CYCLES lists, each exactly: a new
   cycle, or a known one grown or gone, is an error (a cycle gone is taken
   off the list, which issue 41 is to empty).
6. Nothing outside src/arch/ asks "which architecture": no strcmp,
   strncmp, strcasecmp, strncasecmp or streq with a string literal that
   is an architecture's name (the registry's rows: their general.architecture,
   aliases and HF classes, and the names of ARCH_TABLES) in a file outside
   src/arch/.  The registry answers instead (wf_arch.h).  Inside src/arch/,
   the only table that names architectures besides the descriptors is
   llama-quantize's 70B rule (ARCH_TABLES), which is llama.cpp's, keyed by
   GGUF names the registry has no row for.

Exits 1 with one line per problem, 0 when the tree keeps every rule.
"""
import os
import re
import subprocess
import sys

LAYERS = ["base", "net", "codec", "model", "arch", "view", "lib", "mount", "cli", "fuse"]
# docs/design.md's "may call" column: not a straight line (mount, below lib
# in LAYERS, may not call it: the library and the mount are two front-ends
# over view)
MAY = {"base": set(), "net": {"base"}, "codec": {"base"}, "model": {"base", "net", "codec"},
       "arch": {"base", "codec", "model"}, "view": {"base", "codec", "model", "arch"},
       "lib": {"base", "net", "codec", "model", "arch", "view"}, "mount": {"base", "codec", "model", "arch", "view"},
       "cli": {"base", "net", "codec", "model", "arch", "view", "lib", "mount"},
       "fuse": {"base", "net", "codec", "model", "arch", "view", "lib", "mount", "cli"}}
# Files allowed to call each other: none (issue 41 took the last cycles apart).
# A set listed here must be exactly one cycle of the call graph.
KNOWN_CYCLES = []
MAX_LINES = 80
# rule 6: src/arch/ owns the question "which architecture"; these tables
# there name architectures the registry has no row for, each documented
ARCH_DIR = "src/arch/"
ARCH_TABLES = {"src/arch/wf_arch_quant.c": "llama_70b"}
ARCH_FIELD = re.compile(r'\.(?:gguf|canon|hf_model_type|wrapper)\s*=\s*"([^"]+)"')
ARCH_LIST = re.compile(r'\.(?:hf|names)\s*=\s*\{([^}]*)\}')
STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
STRCMP = re.compile(r'\b(strn?cmp|strn?casecmp|streq)\s*\(')
COMMENT = re.compile(r'/\*.*?\*/|//[^\n]*', re.S)
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
            elif theirs != mine and theirs not in MAY[mine]:
                problems.append("%s: #include \"%s\": %s may not call %s" % (f, inc, mine, theirs))
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


def symbols(objdir):
    """{file: (defined, used)} for each object under objdir (FOLDER/NAME.o),
    file named as its source without .c (src/FOLDER/NAME), from nm -P."""
    out = {}
    for dp, _, fn in os.walk(objdir):
        for f in sorted(fn):
            if not f.endswith(".o"):
                continue
            path = os.path.join(dp, f)
            name = "src/" + os.path.relpath(path, objdir)[:-2]
            r = subprocess.run(["nm", "-P", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            if r.returncode != 0:
                raise RuntimeError("nm %s: %s" % (path, r.stderr.strip()))
            defined, used = set(), set()
            for line in r.stdout.splitlines():
                p = line.split()
                if len(p) >= 2 and p[1] == "U":
                    used.add(p[0])
                elif len(p) >= 2 and p[1] in "TDBRCVW":
                    defined.add(p[0])
            out[name] = (defined, used)
    return out


def call_graph(syms):
    owner = {}
    for f, (defined, _) in syms.items():
        for d in defined:
            owner[d] = f
    graph = {f: set() for f in syms}
    for f, (_, used) in syms.items():
        for u in used:
            if u in owner and owner[u] != f:
                graph[f].add(owner[u])
    return graph


def cycles(graph):
    """The strongly connected components of more than one file (Tarjan's,
    without recursion)."""
    index, low, on, stack, out, n = {}, {}, set(), [], [], [0]
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = n[0]
        n[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = n[0]
                    n[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(comp)
    return out


def check_calls(syms, problems, known=None):
    known = KNOWN_CYCLES if known is None else known
    graph = call_graph(syms)
    for f in sorted(graph):
        for d in sorted(graph[f]):
            a, b = layer_of(f), layer_of(d)
            if a in MAY and b in MAY and a != b and b not in MAY[a]:
                problems.append("%s.c calls %s.c: %s may not call %s" % (f, d, a, b))
    found = cycles(graph)
    for comp in found:
        if comp not in known:
            problems.append("call cycle: %s (files that call each other: one of them must not)" %
                            ", ".join(sorted(comp)))
    for comp in known:
        if comp not in found:
            problems.append("KNOWN_CYCLES: %s is no longer a cycle as listed: take it off (or list it as it is)" %
                            ", ".join(sorted(comp)))
    return graph


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


def arch_names(root, files):
    """The names an architecture goes by: every registry row's (src/arch/'s
    descriptors) and those of the tables ARCH_TABLES lets name them."""
    names = set()
    for f in files:
        if not f.startswith(ARCH_DIR) or not f.endswith(".c"):
            continue
        text = COMMENT.sub(" ", open(os.path.join(root, f), encoding="utf-8").read())
        names.update(ARCH_FIELD.findall(text))
        for lst in ARCH_LIST.findall(text):
            names.update(STRING.findall(lst))
        if f in ARCH_TABLES:
            m = re.search(r"\b%s\[\]\s*=\s*(\{.*?\});" % ARCH_TABLES[f], text, re.S)
            if m is None:
                continue
            names.update(STRING.findall(m.group(1)))
    return names


def call_args(text, i):
    """The text of a call's arguments, from just after its '(' at i to the
    ')' that closes it (parentheses in string literals skipped)."""
    depth, j = 1, i
    while j < len(text) and depth:
        if text[j] == '"':
            m = STRING.match(text, j)
            j = m.end() if m else j + 1
            continue
        depth += {"(": 1, ")": -1}.get(text[j], 0)
        j += 1
    return text[i:j]


def check_arch_names(root, files, problems):
    names = arch_names(root, files)
    for f in files:
        if f.startswith(ARCH_DIR):
            continue
        text = COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"),
                           open(os.path.join(root, f), encoding="utf-8").read())
        for m in STRCMP.finditer(text):
            for lit in STRING.findall(call_args(text, m.end())):
                if lit in names:
                    problems.append("%s:%d: %s(..., \"%s\"): asks which architecture outside %s; ask the "
                                    "registry (wf_arch.h)" % (f, text.count("\n", 0, m.start()) + 1,
                                                             m.group(1), lit, ARCH_DIR))
    return names


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
        put("src/mount/x.c", '#include "lib/y.h"\n')
        put("src/lib/y.h", "")
        put("src/arch/wf_arch_z.c", 'const struct wf_arch z = {.hf = {"ZForCausalLM", NULL}, .gguf = "zed"};\n'
            'static int f(const char *a) { return strcmp(a, "zed") == 0; }\n')
        put("src/arch/wf_arch_quant.c", 'static const struct {const char *arch;} llama_70b[] = {{"deci"}};\n')
        put("src/cli/c.c", 'int g(const char *a)\n{\n\t/* strcmp(a, "zed") in a comment is fine */\n'
            '\treturn strcmp(a, "ZForCausalLM") == 0 || strncmp(a,\n\t\t"deci", 4) == 0 || strcmp(a, "zedd");\n}\n')
        files = sources(root)
        problems = []
        check_cycles(check_layers(root, files, problems), problems)
        check_lengths(root, files, problems)
        check_makefile(root, files, problems)
        check_arch_names(root, files, problems)
        # calls: mount -> lib, a new cycle, a known cycle gone
        syms = {"src/mount/x": ({"x"}, {"lib_f"}), "src/lib/y": ({"lib_f"}, set()),
                "src/model/a": ({"a"}, {"b"}), "src/model/b": ({"b"}, {"c"}), "src/model/c": ({"c"}, {"a"})}
        check_calls(syms, problems, known=[{"src/view/p", "src/view/q"}])
        want = ["view is above base", "include cycle", "f() is 88 lines", "src/model/m.c is not in",
                "src/codec/gone.c does not exist", "mount may not call lib", "src/mount/x.c calls src/lib/y.c",
                "call cycle: src/model/a, src/model/b, src/model/c", "src/view/p, src/view/q is no longer",
                'src/cli/c.c:4: strcmp(..., "ZForCausalLM")', 'src/cli/c.c:4: strncmp(..., "deci")']
        # and only those: src/arch/ may ask, a comment says nothing, "zedd" is no name
        extra = [p for p in problems if "asks which architecture" in p and not any(w in p for w in want)]
        if extra:
            print("layers-check: self-test: caught wrongly: " + "; ".join(extra))
            return 1
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
    names = check_arch_names(root, files, problems)
    calls = ""
    if len(argv) > 2:
        graph = check_calls(symbols(argv[2]), problems)
        calls = ", %d files' calls as design.md allows, no call cycle but the %d known" % (
            len(graph), len(KNOWN_CYCLES))
    for p in problems:
        print("layers-check: " + p)
    if problems:
        return 1
    print("layers-check: %d files in %d layers (%s), no upward include, no include cycle%s, "
          "no function over %d lines, no strcmp on the %d architecture names outside %s" %
          (len(files), len(LAYERS), " < ".join(LAYERS), calls, MAX_LINES, len(names), ARCH_DIR))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
