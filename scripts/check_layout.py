#!/usr/bin/env python3
"""Checks src/'s `#include "..."` lines against the layout map in DESIGN.md.

The map is the fenced block tagged `kbv-layout` in DESIGN.md ("Layout map"):
    ROOM: ALLOWED...        a folder of src/ and the folders it may include ('-' for none)
    planned ROOM: ALLOWED   the same, for a folder that may not exist yet
    known FILE -> HEADER    one include the map forbids, kept on purpose (the reason beside it
                            in DESIGN.md); it must still occur, or the check asks to remove it
Text after '#' is a comment. Fails (exit 1, one line per problem) on an include the map forbids,
on a cycle between folders (in the map or in the code), on a folder of src/ the map does not
name, and on a room of the map (not planned) that is not in src/.
Also fails on a file of src/ outside src/cli/ that prints to the terminal or ends the process
(printf, fprintf/fputs/fwrite to stdout or stderr, puts, std::cout/cerr/clog, fmt::print, exit):
only the CLI prints and picks an exit code (DESIGN.md, "Errors and exit codes"). src/worker/ is
exempt: a worker's stdout/stderr is not the terminal but its own log file (cache/logs), which the
supervisor reads back when the worker fails; `_exit` in a forked child (util/subprocess) is not `exit`.
Usage: scripts/check_layout.py [--root DIR]
"""
import argparse
import re
import sys
from pathlib import Path

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCES = {".h", ".hh", ".hpp", ".cc", ".cpp", ".cu", ".cuh"}
# Rooms that may print: the CLI, and the worker (its stdout/stderr is its log file, not the terminal).
MAY_PRINT = {"cli", "worker"}
PRINTS = re.compile(
    r"(?<![\w.:])(?:std::|::)?(?:printf|puts|exit|quick_exit)\s*\("
    r"|\b(?:fprintf|vfprintf|fputs|fputc|putc|fwrite|fflush)\s*\([^;]*\b(?:stdout|stderr)\b"
    r"|\bstd::(?:cout|cerr|clog)\b"
    r"|\bfmt::print\s*\(")
STRING_OR_COMMENT = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|//[^\n]*|/\*.*?\*/', re.S)


def printing_lines(text):
    """(line number, line) of each call that prints to the terminal or exits, strings and comments left out."""
    code = STRING_OR_COMMENT.sub(lambda m: '""' if m.group(0)[0] in "\"'" else
                                 "\n" * m.group(0).count("\n"), text)
    lines = text.splitlines()
    return [(n, lines[n - 1].strip() if n <= len(lines) else "")
            for n, line in enumerate(code.splitlines(), 1) if PRINTS.search(line)]


def read_map(design):
    """{room: set(allowed)}, planned rooms, known exceptions {(file, header): line}, errors."""
    rooms, planned, known, errors = {}, set(), {}, []
    block, found = None, False
    for n, line in enumerate(design.read_text().splitlines(), 1):
        if block is None:
            if line.strip().startswith("```kbv-layout"):
                block, found = [], True
            continue
        if line.strip().startswith("```"):
            break
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        where = f"{design.name}:{n}"
        if text.startswith("known "):
            parts = text[len("known "):].split("->")
            if len(parts) != 2:
                errors.append(f"{where}: expected 'known FILE -> HEADER', got '{text}'")
                continue
            known[(parts[0].strip(), parts[1].strip())] = where
            continue
        is_planned = text.startswith("planned ")
        if is_planned:
            text = text[len("planned "):]
        if ":" not in text:
            errors.append(f"{where}: expected 'ROOM: ALLOWED...', got '{text}'")
            continue
        room, allowed = (s.strip() for s in text.split(":", 1))
        if room in rooms:
            errors.append(f"{where}: room '{room}' named twice")
        rooms[room] = set() if allowed in ("-", "") else set(allowed.split())
        if is_planned:
            planned.add(room)
    if not found:
        errors.append(f"{design.name}: no ```kbv-layout block (the layout map) found")
    for room, allowed in rooms.items():
        for other in sorted(allowed - set(rooms)):
            errors.append(f"{design.name}: room '{room}' may include '{other}', which the map does not name")
    return rooms, planned, known, errors


def find_cycle(graph):
    """One cycle of {node: set(successors)} as a list of nodes (first == last), or None."""
    state, stack = {}, []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for succ in sorted(graph.get(node, ())):
            if state.get(succ) == 1:
                return stack[stack.index(succ):] + [succ]
            if succ not in state:
                cycle = visit(succ)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=Path(__file__).resolve().parent.parent, type=Path,
                    help="the repository root (default: this script's)")
    root = ap.parse_args().root
    src = root / "src"
    rooms, planned, known, problems = read_map(root / "DESIGN.md")

    cycle = find_cycle(rooms)
    if cycle:
        problems.append("DESIGN.md: the map itself has a cycle: " + " -> ".join(cycle))

    present = sorted(p.name for p in src.iterdir() if p.is_dir())
    for room in present:
        if room not in rooms:
            problems.append(f"src/{room}/: a folder the layout map in DESIGN.md does not name")
    for room in sorted(set(rooms) - set(present) - planned):
        problems.append(f"DESIGN.md: room '{room}' is in the map but src/{room}/ does not exist "
                        f"(remove it, or mark it 'planned')")

    edges = {}      # (from, to) -> first "file:line"
    seen_known = set()
    for path in sorted(src.rglob("*")):
        if path.suffix not in SOURCES or not path.is_file():
            continue
        rel = path.relative_to(root).as_posix()
        room = path.relative_to(src).parts[0]
        if len(path.relative_to(src).parts) < 2 or room not in rooms:
            continue  # a file directly in src/ or in an unnamed folder (reported above)
        text = path.read_text(errors="replace")
        if room not in MAY_PRINT:
            for n, line in printing_lines(text):
                problems.append(f"{rel}:{n}: prints to the terminal or exits outside src/cli ({line}); return an "
                                f"Outcome and send lines through Notify (util/outcome.h)")
        for n, line in enumerate(text.splitlines(), 1):
            m = INCLUDE.match(line)
            if not m or "/" not in m.group(1):
                continue  # not an include, or one of the same folder
            header = m.group(1)
            target = header.split("/", 1)[0]
            if target == room or (target not in rooms and not (src / target).is_dir()):
                continue  # its own room, or not kbv's (a library's quoted include)
            if (rel, header) in known:
                seen_known.add((rel, header))
                continue
            edges.setdefault((room, target), f"{rel}:{n}")
            if target not in rooms.get(room, set()):
                problems.append(f"{rel}:{n}: room {room} may not include room {target} (\"{header}\"; "
                                f"DESIGN.md, Layout map)")

    for (rel, header), where in sorted(known.items()):
        if (rel, header) not in seen_known:
            problems.append(f"{where}: known exception '{rel} -> {header}' no longer occurs: remove it from the map")

    graph = {}
    for (a, b) in edges:
        graph.setdefault(a, set()).add(b)
    cycle = find_cycle(graph)
    if cycle:
        hops = "; ".join(f"{edges[(a, b)]} ({a} -> {b})" for a, b in zip(cycle, cycle[1:]))
        problems.append("cycle between folders: " + " -> ".join(cycle) + ": " + hops)

    for p in problems:
        print(p)
    if known and not problems:
        for (rel, header), where in sorted(known.items()):
            print(f"check_layout: known exception {rel} -> {header} ({where})", file=sys.stderr)
    print(f"check_layout: {len(present)} folders, {len(edges)} pairs of folders with includes between them, "
          f"{len(problems)} problem(s)", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
