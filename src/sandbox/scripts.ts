// Programs that run inside a sandbox: the exec wrapper that makes commands idempotent and caps their
// output in place, and the text editor. They are data here; the sandbox runs them, the host never does.

/**
 * Runs $MA_SCRIPT once per $MA_KEY. The first attempt records output and exit code under /tmp; a later
 * attempt with the same key (an activity retry) waits for or reads that record instead of running again.
 * Only a capped head and tail of the output leave the sandbox, followed by a trailer the host parses; the
 * whole of a longer output is kept in ~/.tool-output/$MA_KEY.txt.
 */
export const EXEC_WRAPPER = String.raw`
d=/tmp/.ma-exec
mkdir -p "$d" || exit 90
f="$d/$MA_KEY"
max="$MA_MAX"
replayed=0
if [ "$MA_HAS_STDIN" = 1 ] && [ ! -e "$f.exit" ]; then cat > "$f.in.$$"; fi
if [ -e "$f.exit" ]; then
  replayed=1
elif mkdir "$f.run" 2>/dev/null; then
  in=/dev/null
  if [ -e "$f.in.$$" ]; then mv "$f.in.$$" "$f.in"; in="$f.in"; fi
  : > "$f.out"
  setsid -w bash -c 'echo $$ > "$0.pid"; s="$MA_SCRIPT"; t="$MA_TIMEOUT"; unset MA_SCRIPT MA_KEY MA_MAX MA_TIMEOUT MA_HAS_STDIN; exec timeout -k 5 "$t" bash -c "$s"' "$f" > "$f.out" 2>&1 < "$in" &
  c=$!
  wait "$c"
  echo $? > "$f.exit.tmp" && mv "$f.exit.tmp" "$f.exit"
else
  replayed=1
  while [ ! -e "$f.exit" ]; do sleep 0.1; done
fi
rm -f "$f.in.$$"
if [ ! -f "$f.out" ] || [ -L "$f.out" ]; then
  printf 'the command record was tampered with'
  printf '\n\0MA-META 99 0 %s\0' "$replayed"
  exit 0
fi
size=$(stat -c %s "$f.out")
if [ "$size" -le "$max" ]; then
  head -c "$max" "$f.out"
else
  half=$((max / 2))
  head -c "$half" "$f.out"
  printf '\n\0MA-CUT\0\n'
  tail -c "$half" "$f.out"
fi
# Output too long to send is kept whole in the home volume, which outlives the container.
kept=0
if [ "$size" -gt "$max" ]; then
  k="$HOME/.tool-output/$MA_KEY.txt"
  if [ -f "$k" ] || { mkdir -p "$HOME/.tool-output" && cp "$f.out" "$k"; } 2>/dev/null; then kept=1; fi
fi
printf '\n\0MA-META %s %s %s %s\0' "$(cat "$f.exit")" "$size" "$replayed" "$kept"
`;

/**
 * Copies the output of the command EXEC_WRAPPER runs for $MA_KEY to stdout as it is written, from its first byte,
 * at most $MA_LIVE bytes, until the command ends: the live preview, a second exec the host starts only for a
 * command still running after a moment. head's output is unbuffered (stdbuf), or it would hold everything back
 * until it exits. An image without these tools just streams nothing; the command and its result are unaffected.
 */
export const EXEC_LIVE = String.raw`f="/tmp/.ma-exec/$MA_KEY"; [ -e "$f.exit" ] && exit 0; p=$(cat "$f.pid" 2>/dev/null) || exit 0; tail -s 0.01 -c +1 -f --pid="$p" "$f.out" 2>/dev/null | stdbuf -o0 head -c "$MA_LIVE"`;

/** Kills the process group of a command started by EXEC_WRAPPER (used on cancellation). */
export const EXEC_KILL = String.raw`p=$(cat "/tmp/.ma-exec/$MA_KEY.pid" 2>/dev/null) && kill -KILL -- "-$p" 2>/dev/null; true`;

/** Anthropic's text editor tool (view, create, str_replace, insert), reading its input as JSON on stdin. */
export const EDITOR_PY = String.raw`
import json, os, sys
inp = json.load(sys.stdin)
cmd = inp.get("command")
path = inp.get("path")
def fail(msg):
    print(msg)
    sys.exit(1)
if not isinstance(path, str) or not path:
    fail("Error: path is required")
path = os.path.normpath(os.path.join(os.getcwd(), path))
def numbered(text, start=1):
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines = lines[:-1]
    return "\n".join("%6d\t%s" % (i + start, l) for i, l in enumerate(lines))
def read(p):
    try:
        with open(p, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except FileNotFoundError:
        fail("Error: the path %s does not exist" % p)
    except IsADirectoryError:
        fail("Error: %s is a directory" % p)
    except PermissionError:
        fail("Error: permission denied: %s" % p)
def write(p, text):
    try:
        d = os.path.dirname(p)
        if d:
            os.makedirs(d, exist_ok=True)
        with open(p, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as e:
        fail("Error: cannot write %s: %s" % (p, e.strerror))
if cmd == "view":
    if os.path.isdir(path):
        out = []
        base = path.rstrip("/") or "/"
        for root, dirs, files in os.walk(base):
            depth = root[len(base):].count("/")
            dirs[:] = sorted(x for x in dirs if not x.startswith("."))
            if depth >= 2:
                dirs[:] = []
            for name in sorted(dirs) + sorted(x for x in files if not x.startswith(".")):
                out.append(os.path.join(root, name))
        print("Files and directories up to 2 levels deep in %s, excluding hidden items:\n%s" % (path, "\n".join(out)))
        sys.exit(0)
    text = read(path)
    rng = inp.get("view_range")
    if rng is not None:
        if not (isinstance(rng, list) and len(rng) == 2 and all(isinstance(x, int) for x in rng)):
            fail("Error: view_range must be two integers [start, end]")
        lines = text.split("\n")
        start, end = rng
        if start < 1 or start > len(lines) or (end != -1 and (end < start or end > len(lines))):
            fail("Error: invalid view_range %s for a file of %d lines" % (rng, len(lines)))
        sel = lines[start - 1:] if end == -1 else lines[start - 1:end]
        print(numbered("\n".join(sel), start))
    else:
        print(numbered(text))
elif cmd == "create":
    text = inp.get("file_text")
    if not isinstance(text, str):
        fail("Error: file_text is required for create")
    write(path, text)
    print("File created successfully at: %s" % path)
elif cmd == "str_replace":
    old = inp.get("old_str")
    new = inp.get("new_str") or ""
    if not isinstance(old, str) or old == "":
        fail("Error: old_str is required for str_replace")
    text = read(path)
    count = text.count(old)
    if count == 0:
        fail("Error: no replacement was performed: old_str did not appear verbatim in %s" % path)
    if count > 1:
        lines = [i + 1 for i, l in enumerate(text.split("\n")) if old.split("\n")[0] in l]
        fail("Error: no replacement was performed: old_str appears %d times in %s (lines %s); make it unique" % (count, path, lines))
    write(path, text.replace(old, new, 1))
    line = text[: text.index(old)].count("\n") + 1
    snippet = (text.replace(old, new, 1)).split("\n")[max(0, line - 4): line + new.count("\n") + 3]
    print("The file %s has been edited. Snippet:\n%s" % (path, numbered("\n".join(snippet), max(1, line - 3))))
elif cmd == "insert":
    at = inp.get("insert_line")
    new = inp.get("insert_text", inp.get("new_str"))
    if not isinstance(at, int) or not isinstance(new, str):
        fail("Error: insert needs integer insert_line and string insert_text")
    text = read(path)
    lines = text.split("\n")
    if at < 0 or at > len(lines):
        fail("Error: insert_line %d is outside the file's %d lines" % (at, len(lines)))
    write(path, "\n".join(lines[:at] + new.split("\n") + lines[at:]))
    print("The file %s has been edited: text inserted after line %d." % (path, at))
else:
    fail("Error: unknown command %r; use view, create, str_replace or insert" % (cmd,))
`;
