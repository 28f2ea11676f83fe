#!/usr/bin/env python3
"""The sandbox crate's import graph (file level): no cycle, and with --layers the direction
face -> {daemon side, child side} -> shared modules (sandbox/README.md, "Layout"); with
--folders also no cycle between folders (a folder's files taken as one node, each top-level
file its own node), each printed with the file edges that make it.
Edges: `crate::a::b`, `super::x`, and `self::child`/child-module paths in `use` lines.
Usage: import-layers.py SRC_DIR [--edges] [--layers] [--folders]"""
import os, re, sys
src = sys.argv[1]
files = {}
for root, _, names in os.walk(src):
    for n in names:
        if n.endswith('.rs') and 'bin' not in os.path.relpath(root, src).split(os.sep):
            p = os.path.relpath(os.path.join(root, n), src)
            parts = p[:-3].split(os.sep)
            if parts[-1] in ('mod', 'lib'):
                parts = parts[:-1]
            files[tuple(parts)] = p
def resolve(path):
    # longest prefix of path that is a module file
    for i in range(len(path), -1, -1):
        if tuple(path[:i]) in files:
            return tuple(path[:i])
    return None
def strip_tests(text):
    # drop #[cfg(test)] mod tests { ... } blocks
    out = []; i = 0
    m = re.search(r'#\[cfg\(test\)\]\s*mod\s+\w+\s*\{', text)
    while m:
        out.append(text[i:m.start()])
        depth = 0; j = m.end() - 1
        while j < len(text):
            if text[j] == '{': depth += 1
            elif text[j] == '}':
                depth -= 1
                if depth == 0: break
            j += 1
        i = j + 1
        m = re.compile(r'#\[cfg\(test\)\]\s*mod\s+\w+\s*\{').search(text, i)
    out.append(text[i:])
    return ''.join(out)
def expand(prefix, body):
    # expand a use tree body like {a, b::{c, d}, e::f as g}
    items = []; depth = 0; cur = ''
    for ch in body:
        if ch == '{': depth += 1
        if ch == '}': depth -= 1
        if ch == ',' and depth == 0:
            items.append(cur); cur = ''
        else:
            cur += ch
    items.append(cur)
    res = []
    for it in items:
        it = it.strip()
        if not it: continue
        it = re.sub(r'\s+as\s+\w+$', '', it)
        if '{' in it:
            head, rest = it.split('{', 1)
            res += expand(prefix + [x for x in head.strip().rstrip(':').split('::') if x], rest.rsplit('}', 1)[0])
        else:
            res.append(prefix + it.split('::'))
    return res
edges = {}
for mod, p in files.items():
    text = strip_tests(open(os.path.join(src, p)).read())
    text = re.sub(r'//[^\n]*', '', text)
    paths = []
    for m in re.finditer(r'\buse\s+((?:crate|super|self)(?:::\w+)*)::\{', text):
        start = m.end(); depth = 1; j = start
        while depth:
            if text[j] == '{': depth += 1
            if text[j] == '}': depth -= 1
            j += 1
        paths += expand(m.group(1).split('::'), text[start:j-1])
    for m in re.finditer(r"\b((?:crate|super)(?:::\w+)+)\b(?!::)", text):
        paths.append(m.group(1).split('::'))
    is_dir = p.endswith('mod.rs') or p == 'lib.rs'
    # a parent's own references to its child modules: `child::x` or `use child::...`
    for child in re.findall(r'^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;', text, re.M):
        if re.search(r'(?<![\w:])' + child + r'::', text):
            paths.append(['self', child])
    for path in paths:
        if path[0] == 'crate':
            tgt = list(path[1:])
        else:
            base = list(mod)
            while path and path[0] in ('super', 'self'):
                if path[0] == 'super': base = base[:-1]
                path = path[1:]
            tgt = base + list(path)
        r = resolve(tgt)
        if r is not None and r != mod and r != ():
            edges.setdefault(mod, set()).add(r)
name = lambda m: '::'.join(m) or 'lib'
if '--edges' in sys.argv:
    for a in sorted(edges):
        print(name(a), '->', ', '.join(sorted(name(b) for b in edges[a])))
def strongly_connected(nodes, graph):
    """Tarjan: the strongly connected components of more than one node."""
    index = {}; low = {}; stack = []; on = set(); found = []; c = [0]
    def visit(v):
        index[v] = low[v] = c[0]; c[0] += 1; stack.append(v); on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            s = []
            while True:
                w = stack.pop(); on.discard(w); s.append(w)
                if w == v: break
            if len(s) > 1: found.append(s)
    for v in sorted(nodes):
        if v not in index: visit(v)
    return found
sys.setrecursionlimit(10000)
sccs = strongly_connected(files, edges)
print(f'{len(files)} modules, {sum(len(e) for e in edges.values())} import edges')
if not sccs:
    print('no cycle')
for s in sccs:
    print('cycle:', ' <-> '.join(sorted(name(m) for m in s)))
bad = []
if '--layers' in sys.argv:
    # face: the crate's entry points, may use both sides; daemon and child sides: each only
    # itself and the shared modules; shared: only shared.
    face = {'lib', 'foreground::run'}
    daemon = {'sandbox', 'plan::planner', 'egress::launch', 'launcher', 'restart', 'spawner', 'warm', 'foreground', 'detect'}
    # shared modules that live in a daemon-side folder (the warm key: both sides compute it)
    shared_inside = {'warm::key'}
    def layer(m):
        n = name(m)
        if n in face: return 'face'
        if n in shared_inside: return 'shared'
        if n in daemon or (m and m[0] in daemon): return 'daemon'
        if m and m[0] == 'helper': return 'child'
        return 'shared'
    allowed = {'face': {'face', 'daemon', 'child', 'shared'}, 'daemon': {'daemon', 'shared'},
               'child': {'child', 'shared'}, 'shared': {'shared'}}
    for a in sorted(edges):
        for b in sorted(edges[a]):
            if layer(b) not in allowed[layer(a)]:
                bad.append(f'{layer(a)} {name(a)} -> {layer(b)} {name(b)}')
    for b in bad: print('layer violation:', b)
    if not bad: print('layers: face -> {daemon, child} -> shared; no violation')
folder_cycles = []
if '--folders' in sys.argv:
    folders = {m[0] for m in files if len(m) > 1}
    group = lambda m: m[0] if m and m[0] in folders else name(m)
    fedges = {}; why = {}
    for a in edges:
        for b in edges[a]:
            ga, gb = group(a), group(b)
            if ga != gb:
                fedges.setdefault(ga, set()).add(gb)
                why.setdefault((ga, gb), []).append(f'{name(a)} -> {name(b)}')
    folder_cycles = strongly_connected({group(m) for m in files}, fedges)
    for s_ in folder_cycles:
        members = set(s_)
        print('folder cycle:', ' <-> '.join(sorted(s_)))
        for (ga, gb), es in sorted(why.items()):
            if ga in members and gb in members:
                print(f'  {ga} -> {gb}:', ', '.join(sorted(es)))
    if not folder_cycles: print('folders: no cycle between folders')
sys.exit(1 if sccs or bad or folder_cycles else 0)
