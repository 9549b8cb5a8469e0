// The file tools (read, write, edit, glob, grep) as one program that runs inside a sandbox. It is data here; the
// sandbox runs it with python3, the host never does.

/**
 * Reads `{tool, input}` as JSON on stdin and runs that tool in the current directory, the workspace. Every path
 * is resolved with its symbolic links and refused unless it stays inside the workspace or under /mnt, where the
 * session's uploads, outputs, memory stores and skills are mounted; glob and grep never descend through a link.
 * A write refused by a read-only mount says so. Output stops at MAX_OUT bytes with a line saying so (the exec wrapper caps it further).
 * A failure is one line, `TOOL: what went wrong`, and exit status 1.
 */
export const FILE_TOOLS_PY = String.raw`
import errno, json, os, re, stat, sys
inp = json.load(sys.stdin)
tool = inp.get("tool")
args = inp.get("input") or {}
ROOT = os.path.realpath(os.getcwd())
MOUNTS = "/mnt"
SKIP_DIRS = (".git", "node_modules")
MAX_OUT = 1024 * 1024
MAX_EDIT_BYTES = 16 * 1024 * 1024
MAX_LINE_SHOWN = 2000

def fail(msg):
    sys.stdout.write("%s: %s" % (tool, msg))
    sys.exit(1)

def inside(p):
    return any(p == r or p.startswith(r.rstrip("/") + "/") for r in (ROOT, MOUNTS))

def resolve(shown):
    full = os.path.realpath(os.path.join(ROOT, shown))
    if not inside(full):
        fail("%s is outside the workspace %s and the mounts under %s" % (shown, ROOT, MOUNTS))
    return full

def write_failed(path, shown, e, what="write"):
    if e.errno in (errno.EACCES, errno.EPERM, errno.EROFS) and path.startswith(MOUNTS + "/"):
        fail("cannot %s %s: it is in a read-only mount" % (what, shown))
    fail("cannot %s %s: %s" % (what, shown, e.strerror))

def regular(path, shown):
    try:
        st = os.stat(path)
    except FileNotFoundError:
        fail("%s does not exist" % shown)
    except OSError as e:
        fail("cannot read %s: %s" % (shown, e.strerror))
    if stat.S_ISDIR(st.st_mode):
        fail("%s is a directory" % shown)
    if not stat.S_ISREG(st.st_mode):
        fail("%s is not a regular file" % shown)
    return st

def walk(base):
    """Regular files under base, sorted, skipping SKIP_DIRS; a linked file counts only if it leads inside."""
    for root, dirs, files in os.walk(base):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for name in sorted(files):
            full = os.path.join(root, name)
            if os.path.islink(full):
                real = os.path.realpath(full)
                if not inside(real) or not os.path.isfile(real):
                    continue
            yield full

class Out:
    def __init__(self):
        self.n = 0
    def write(self, text):
        data = text.encode("utf-8", "replace")
        if self.n + len(data) > MAX_OUT:
            return False
        sys.stdout.buffer.write(data)
        self.n += len(data)
        return True

def read_text(path, shown):
    try:
        with open(path, encoding="utf-8", errors="surrogateescape", newline="") as fh:
            return fh.read()
    except OSError as e:
        fail("cannot read %s: %s" % (shown, e.strerror))

def write_text(path, shown, text):
    try:
        with open(path, "w", encoding="utf-8", errors="surrogateescape", newline="") as fh:
            fh.write(text)
    except OSError as e:
        write_failed(path, shown, e)

def do_read():
    shown = args["file_path"]
    path = resolve(shown)
    regular(path, shown)
    start, end = args.get("view_range") or (1, 0)
    out = Out()
    n = 0
    shown_any = False
    try:
        with open(path, "rb") as fh:
            if b"\0" in fh.read(8192):
                fail("%s is a binary file; read shows text only" % shown)
            fh.seek(0)
            for raw in fh:
                n += 1
                if n < start:
                    continue
                if end > 0 and n > end:
                    break
                if not out.write(raw.decode("utf-8", "replace")):
                    sys.stdout.write("\n[read stopped before line %d after %d bytes; use view_range to read on]" % (n, out.n))
                    return
                shown_any = True
    except OSError as e:
        fail("cannot read %s: %s" % (shown, e.strerror))
    if not shown_any:
        if n == 0:
            sys.stdout.write("(%s is empty)" % shown)
        else:
            fail("view_range starts at line %d, but %s has %d lines" % (start, shown, n))

def do_write():
    shown = args["file_path"]
    path = resolve(shown)
    if os.path.lexists(path) and not os.path.isfile(path):
        fail("%s exists and is not a regular file" % shown)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
    except OSError as e:
        write_failed(path, shown, e, "create the directory of")
    content = args["content"]
    write_text(path, shown, content)
    sys.stdout.write("wrote %d bytes to %s" % (len(content.encode("utf-8", "surrogateescape")), path))

def do_edit():
    shown = args["file_path"]
    path = resolve(shown)
    if regular(path, shown).st_size > MAX_EDIT_BYTES:
        fail("%s is larger than %d bytes; edit it with bash" % (shown, MAX_EDIT_BYTES))
    old, new, every = args["old_string"], args["new_string"], bool(args.get("replace_all"))
    text = read_text(path, shown)
    count = text.count(old)
    if count == 0:
        fail("old_string does not occur in %s; nothing was changed" % shown)
    if count > 1 and not every:
        fail("old_string occurs %d times in %s; give more context to make it unique, or set replace_all; nothing was changed" % (count, shown))
    write_text(path, shown, text.replace(old, new) if every else text.replace(old, new, 1))
    done = count if every else 1
    sys.stdout.write("edited %s: %d replacement%s" % (path, done, "" if done == 1 else "s"))

def glob_regex(pattern):
    """A doublestar pattern as a regular expression over /-separated paths relative to the search root."""
    out, depth, i = [], 0, 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:[^/]*/)*")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[" and pattern.find("]", i + 2) > 0:
            j = pattern.find("]", i + 2)
            body = pattern[i + 1:j]
            if body[:1] in ("!", "^"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = j
        elif c == "{":
            out.append("(?:")
            depth += 1
        elif c == "}" and depth > 0:
            out.append(")")
            depth -= 1
        elif c == "," and depth > 0:
            out.append("|")
        elif c == "\\" and i + 1 < len(pattern):
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(c))
        i += 1
    if depth:
        fail("pattern %s has a { without its }" % pattern)
    try:
        return re.compile("".join(out) + r"\Z", re.S)
    except re.error as e:
        fail("pattern %s is not a valid glob: %s" % (pattern, e))

def search_root():
    shown = args.get("path")
    return (ROOT, ".") if shown is None else (resolve(shown), shown)

def do_glob():
    pattern = args["pattern"]
    if pattern.startswith("/") or ".." in re.split(r"[/{},]", pattern):
        fail("pattern must be relative and must not contain ..")
    base, shown = search_root()
    if not os.path.isdir(base):
        fail("%s is not a directory" % shown)
    rx = glob_regex(pattern)
    found = []
    for full in walk(base):
        if rx.match(os.path.relpath(full, base)):
            try:
                mtime = os.stat(full).st_mtime
            except OSError:
                mtime = 0
            found.append((-mtime, full))
    if not found:
        sys.stdout.write("no matches")
        return
    found.sort()
    out = Out()
    for k, (_, full) in enumerate(found):
        if not out.write(("\n" if k else "") + full):
            sys.stdout.write("\n[%d more matches not shown]" % (len(found) - k))
            return

def do_grep():
    pattern = args["pattern"]
    try:
        rx = re.compile(pattern)
    except re.error as e:
        fail("invalid regular expression %s: %s" % (pattern, e))
    base, shown = search_root()
    if os.path.isfile(base):
        files = [base]
    elif os.path.isdir(base):
        files = walk(base)
    else:
        fail("%s does not exist" % shown)
    out = Out()
    hits = 0
    for full in files:
        try:
            with open(full, "rb") as fh:
                if b"\0" in fh.read(8192):
                    continue
                fh.seek(0)
                for n, raw in enumerate(fh, 1):
                    line = raw.decode("utf-8", "replace").rstrip("\r\n")
                    if not rx.search(line):
                        continue
                    if len(line) > MAX_LINE_SHOWN:
                        line = line[:MAX_LINE_SHOWN] + "[…]"
                    if not out.write(("\n" if hits else "") + "%s:%d:%s" % (full, n, line)):
                        sys.stdout.write("\n[the search stopped after %d matching lines]" % hits)
                        return
                    hits += 1
        except OSError:
            continue
    if hits == 0:
        sys.stdout.write("no matches")

TOOLS = {"read": do_read, "write": do_write, "edit": do_edit, "glob": do_glob, "grep": do_grep}
if tool not in TOOLS:
    fail("unknown file tool; this program runs read, write, edit, glob and grep")
TOOLS[tool]()
`;
