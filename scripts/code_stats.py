#!/usr/bin/env python3
"""Size figures of src/ for issue 23's closing note: the largest files, the longest functions
(a brace-matching scan of each .cc file, strings and comments left out: a function is a `{...}`
at namespace or class level whose head has a parameter list), and the files outside src/cli/ and
src/worker/ that print to the terminal (scripts/check_layout.py's rule), and the places that
spell a record key: a key the typed record writes (the string literals of `--keys-from`'s JSON,
src/record/record.cc by default) used as a JSON key (`["k"]`, `.value("k"`, `.contains("k"`,
`{"k",`) in a file outside src/record/ and src/proto/ (a lexical count: a message field that shares
a record key's name counts too, so it is an upper bound).
Usage: scripts/code_stats.py [--root DIR] [--under SUBDIR] [--top N] [--keys-from FILE]
"""
import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_layout import MAY_PRINT, SOURCES, STRING_OR_COMMENT, printing_lines  # noqa: E402

NOT_FUNCTION = re.compile(r"^(?:template\s*<.*>\s*)?(?:namespace|struct|class|union|enum|extern)\b", re.S)


def blank_code(text):
    """The text with strings, comments and preprocessor lines blanked, line numbers kept."""
    code = STRING_OR_COMMENT.sub(lambda m: '""' if m.group(0)[0] in "\"'" else "\n" * m.group(0).count("\n"), text)
    return "\n".join("" if line.lstrip().startswith("#") else line for line in code.split("\n"))


def functions(text):
    """(first line, lines, name) of each function defined at namespace or class level."""
    code, found, stack = blank_code(text), [], []  # stack: (kind, start offset, name)
    head_start = 0
    for i, ch in enumerate(code):
        if ch in ";":
            head_start = i + 1
        elif ch == "{":
            head = code[head_start:i].strip()
            inside = any(kind != "scope" for kind, _, _ in stack)
            paren = head.find("(")
            if not inside and paren > 0 and "=" not in head[:paren] and not NOT_FUNCTION.match(head):
                name = head[:paren].split()[-1] if head[:paren].split() else "?"
                start = head_start + len(code[head_start:i]) - len(code[head_start:i].lstrip())
                stack.append(("function", start, name))
            else:
                stack.append(("scope" if not inside and (not head or NOT_FUNCTION.match(head)) else "block", i, ""))
            head_start = i + 1
        elif ch == "}":
            if stack:
                kind, start, name = stack.pop()
                if kind == "function":
                    first, last = code.count("\n", 0, start) + 1, code.count("\n", 0, i) + 1
                    found.append((first, last - first + 1, name))
            head_start = i + 1
    return found


def json_keys(text):
    """The record's keys: the names record.cc's field table visits (`v.always("k"`, `v.opt("k"`, ...)."""
    return set(re.findall(r'\bv\.[a-z_]+\(\s*"([A-Za-z_][A-Za-z0-9_]*)"', text))


def key_uses(text, keys):
    """How many times `text` uses one of `keys` as a JSON key."""
    return sum(1 for k in re.findall(r'(?:\[|\.value\(|\.contains\(|\.find\(|\{)\s*"([A-Za-z_][A-Za-z0-9_]*)"', text)
               if k in keys)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=str(Path(__file__).resolve().parent.parent))
    ap.add_argument("--under", default="src", help="the folder to measure, relative to the root")
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--keys-from", default=str(Path(__file__).resolve().parent.parent / "src/record/record.cc"),
                    help="the file whose JSON keys are the record's (default: this tree's src/record/record.cc)")
    a = ap.parse_args()
    root = Path(a.root)
    keys = json_keys(Path(a.keys_from).read_text())
    key_sites, key_files = 0, 0
    files = sorted(p for p in (root / a.under).rglob("*") if p.is_file() and p.suffix in SOURCES)
    if not files:
        print(f"no source files under {root / a.under}", file=sys.stderr)
        return 1
    sizes, funcs, printing = [], [], []
    for p in files:
        rel, text = p.relative_to(root).as_posix(), p.read_text(errors="replace")
        sizes.append((text.count("\n"), rel))
        if p.suffix == ".cc":
            funcs += [(n, f"{rel}:{line}", name) for line, n, name in functions(text)]
        room = p.relative_to(root / "src").parts[0] if (root / "src") in p.parents else ""
        if room not in MAY_PRINT and printing_lines(text):
            printing.append(rel)
        if room not in ("record", "proto"):
            n = key_uses(STRING_OR_COMMENT.sub(lambda m: m.group(0) if m.group(0)[0] == '"' else "", text), keys)
            key_sites += n
            key_files += n > 0
    print(f"largest files under {a.under} (lines):")
    for n, rel in sorted(sizes, reverse=True)[: a.top]:
        print(f"  {n:6d}  {rel}")
    print(f"longest functions under {a.under} (lines, .cc files):")
    for n, where, name in sorted(funcs, key=lambda f: (-f[0], f[1]))[: a.top]:
        print(f"  {n:6d}  {where}  {name}")
    print(f"files under {a.under} that print to the terminal, outside src/cli and src/worker: {len(printing)}")
    for rel in printing:
        print(f"  {rel}")
    print(f"record keys ({len(keys)} from {Path(a.keys_from).name}) spelled as JSON keys outside src/record and "
          f"src/proto: {key_sites} places in {key_files} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
