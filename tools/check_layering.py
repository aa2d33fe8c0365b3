#!/usr/bin/env python3
"""The layering rules of docs/DESIGN.md section 2, checked on the sources (a CI test).

usage: check_layering.py [ROOT] [--graph]

- runtime/ and schedules/ are leaves: they include nothing of generator/ or of each other
  (the emulated device, runtime/emu/device/, is compiled with the templates, not linked).
- generator/'s folders form no cycle: the graph of "folder A includes a header of folder B"
  is acyclic (generator/cli/ may use every folder; nothing uses it).
- templates/ include only templates/ and the runtime headers the device code shares.
- No source file outside generated/ and tests/ is over 500 lines (data such as the model
  JSON files excepted).
With --graph, prints generator/'s folders in dependency order with what each uses.
Exits 1 with every violation listed.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SOURCE_EXT = ('.cpp', '.hpp', '.h', '.cuh', '.cu', '.py', '.sh')
MAX_LINES = 500
# The runtime headers device code may include (compiled by NVRTC, nvcc or the host compiler).
TEMPLATE_RUNTIME = ('runtime/half.hpp', 'runtime/emu/')


def sources(root, top):
    for base, dirs, names in os.walk(os.path.join(root, top)):
        dirs[:] = sorted(d for d in dirs if not d.startswith('.'))
        for n in sorted(names):
            if n.endswith(SOURCE_EXT):
                yield os.path.relpath(os.path.join(base, n), root).replace(os.sep, '/')


def includes(root, path):
    with open(os.path.join(root, path), encoding='utf-8', errors='replace') as f:
        return INCLUDE.findall(f.read())


def folder(path):
    """generator/<folder>/... -> <folder>; generator/model/onnx/x.cpp -> model."""
    parts = path.split('/')
    return parts[1] if len(parts) > 2 else '.'


def find_cycle(graph):
    """A cycle in {node: set(nodes)} as a list, or None."""
    state, stack = {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                c = visit(m)
                if c:
                    return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            c = visit(n)
            if c:
                return c
    return None


def topo_order(graph):
    order, done = [], set()

    def visit(n):
        if n in done:
            return
        done.add(n)
        for m in sorted(graph.get(n, ())):
            visit(m)
        order.append(n)

    for n in sorted(graph):
        visit(n)
    return order


def main():
    args = [a for a in sys.argv[1:] if not a.startswith('--')]
    root = os.path.abspath(args[0] if args else os.path.join(os.path.dirname(__file__), '..'))
    errors = []
    graph, why = {}, {}
    for top in ('generator', 'runtime', 'schedules', 'templates'):
        for path in sources(root, top):
            for inc in includes(root, path):
                if top == 'runtime' and inc.startswith(('generator/', 'schedules/')):
                    errors.append(f'{path}: includes "{inc}": runtime/ is a leaf')
                elif top == 'schedules' and inc.startswith(('generator/', 'runtime/')):
                    errors.append(f'{path}: includes "{inc}": schedules/ is a leaf')
                elif top == 'templates' and inc.startswith(('generator/', 'schedules/')):
                    errors.append(f'{path}: includes "{inc}": templates are device code')
                elif (top == 'templates' and inc.startswith('runtime/')
                      and not inc.startswith(TEMPLATE_RUNTIME)):
                    errors.append(f'{path}: includes "{inc}": device code may use only '
                                  f'{", ".join(TEMPLATE_RUNTIME)}')
                elif top == 'generator' and inc.startswith('generator/'):
                    a, b = folder(path), folder(inc)
                    graph.setdefault(a, set())
                    graph.setdefault(b, set())
                    if a != b:
                        graph[a].add(b)
                        why.setdefault((a, b), f'{path} includes "{inc}"')
    if 'cli' in graph:
        for a, deps in graph.items():
            if 'cli' in deps:
                errors.append(f'generator/{a}/ uses generator/cli/ ({why[(a, "cli")]}): '
                              'the CLI is the top, a library user never needs it')
    cycle = find_cycle(graph)
    if cycle:
        steps = [f'  {why[(a, b)]}' for a, b in zip(cycle, cycle[1:])]
        errors.append('include cycle between generator/ folders: ' + ' -> '.join(cycle) +
                      '\n' + '\n'.join(steps))
    for top in ('generator', 'runtime', 'schedules', 'templates', 'tools', 'bench', 'models'):
        for path in sources(root, top):
            with open(os.path.join(root, path), encoding='utf-8', errors='replace') as f:
                n = sum(1 for _ in f)
            if n > MAX_LINES:
                errors.append(f'{path}: {n} lines (at most {MAX_LINES}: split it by concept)')
    if '--graph' in sys.argv and not cycle:
        for n in topo_order(graph):
            print(f'generator/{n + "/" if n != "." else ""}: uses '
                  f'{", ".join(sorted(graph[n])) or "nothing else in generator/"}')
    for e in errors:
        print(f'check_layering: {e}', file=sys.stderr)
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
