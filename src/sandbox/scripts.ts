// Programs that run inside a sandbox: the exec wrapper that makes commands idempotent and caps their
// output in place, and the text editor. They are data here; the sandbox runs them, the host never does.

/**
 * Runs $MA_SCRIPT once per $MA_KEY, as `bash -c` in a process group of its own, for at most $MA_TIMEOUT_US
 * microseconds. The first attempt records the output (`$f.out`), the command's pid (`$f.pid`, also its process
 * group) and `exit size` (`$f.exit`) under /tmp/.ma-exec; a later attempt with the same key (an activity retry)
 * waits for or reads that record instead of running again. Only a capped head and tail of the output leave the
 * sandbox, followed by a trailer the host parses; the whole of a longer output is kept in
 * ~/.tool-output/$MA_KEY.txt.
 *
 * Every process started under gVisor costs a fork and an exec through its kernel, so the wrapper does its own work
 * with bash builtins and starts two: the command, and a watchdog subshell (a fork, no exec) that waits out the
 * timeout on a FIFO read nobody answers, then TERMs the command's group and KILLs it 5 s later. The run-once lock
 * is an exclusive create (noclobber), the output's size the file offset the command's stdout shares with the
 * wrapper's fd 3 (/proc/self/fdinfo), and an output within the cap is copied by mapfile and printf, NUL bytes
 * included. Only a longer output, a record whose size is unknown or that does not add up, or an image without
 * job control take coreutils' stat, head, tail and cp, as before. (`@{` stands for `${`, which a template string
 * would take for its own.)
 */
export const EXEC_WRAPPER = String.raw`
k=$MA_KEY s=$MA_SCRIPT t=$MA_TIMEOUT_US max=$MA_MAX hasin=$MA_HAS_STDIN
unset MA_KEY MA_SCRIPT MA_TIMEOUT_US MA_MAX MA_HAS_STDIN
# The host reads stdout only; bash's own notices (a killed watchdog) go nowhere.
exec 2>/dev/null
d=/tmp/.ma-exec
f=$d/$k
[ -d "$d" ] || mkdir -p "$d" || exit 90
[ -p "$d/tick" ] || mkfifo -m 600 "$d/tick" 2>/dev/null
# nap S: waits S seconds on a read of a FIFO nobody writes to (a stray line only ends a nap early).
nap() { if [ -p "$d/tick" ]; then read -r -t "$1" _ <> "$d/tick"; else sleep "$1"; fi; }
clock() { now=@{EPOCHREALTIME//[!0-9]/}; [ -n "$now" ] || now=$((SECONDS * 1000000)); }
nap_until() {
  local left
  while clock; [ "$now" -lt "$1" ]; do
    left=$(($1 - now))
    printf -v left '%d.%06d' $((left / 1000000)) $((left % 1000000))
    nap "$left"
  done
}
watchdog() {
  clock
  local end=$((now + t))
  nap_until "$end"
  : > "$f.timedout"
  kill -TERM -- "-$c" 2>/dev/null
  nap_until $((end + 5000000))
  kill -KILL -- "-$c" 2>/dev/null
}
replayed=0 code= size=
set -C
if [ -e "$f.exit" ]; then
  replayed=1
elif { : > "$f.run"; } 2>/dev/null; then
  set +C
  exec 3> "$f.out" || exit 91
  set -m 2>/dev/null
  if [[ $- == *m* ]]; then
    # Job control: each background job leads a process group of its own.
    if [ "$hasin" = 1 ]; then bash -c "$s" >&3 2>&1 3>&- & else bash -c "$s" >&3 2>&1 3>&- < /dev/null & fi
  elif [ "$hasin" = 1 ]; then
    setsid bash -c "$s" >&3 2>&1 3>&- <&0 &
  else
    setsid bash -c "$s" >&3 2>&1 3>&- < /dev/null &
  fi
  c=$!
  echo "$c" > "$f.pid"
  watchdog > /dev/null 2>&1 < /dev/null 3>&- &
  w=$!
  set +m
  wait "$c"
  code=$?
  # Not waited for (under gVisor that costs a few ms per call): a watchdog still dying when the wrapper exits is
  # reaped by the container's init.
  kill -KILL "$w" 2>/dev/null
  if [ -e "$f.timedout" ]; then
    code=124
    kill -KILL -- "-$c" 2>/dev/null
  fi
  while read -r a b; do [ "$a" = pos: ] && size=$b && break; done < /proc/$$/fdinfo/3
  exec 3>&-
  case "$size" in '' | *[!0-9]*) size=$(stat -c %s "$f.out") ;; esac
  echo "$code $size" > "$f.exit"
else
  replayed=1
fi
set +C
# A record is whole once $f.exit has its line: the first attempt writes it in one write, after the command.
while [ -z "$code" ]; do
  [ -e "$f.exit" ] && read -r code size < "$f.exit"
  [ -n "$code" ] || nap 0.1
done
if [ ! -f "$f.out" ] || [ -L "$f.out" ]; then
  printf 'the command record was tampered with'
  printf '\n\0MA-META 99 0 %s\0' "$replayed"
  exit 0
fi
LC_ALL=C
# small: copies the output when it is $size bytes, at most $max: mapfile splits it at NUL bytes, printf puts
# them back. Prints nothing and returns 1 for a longer output, 2 when the size is unknown or the file does not
# add up to it (a process the command left behind still writes).
small() {
  local p=() n=0 x nul
  case "$size" in '' | *[!0-9]*) return 2 ;; esac
  [ "$size" -le "$max" ] || return 1
  [ "$size" -eq 0 ] && return 0
  mapfile -t -d '' p < "$f.out" || return 2
  for x in "@{p[@]}"; do n=$((n + @{#x})); done
  nul=$((size - n))
  if [ "$nul" -eq "@{#p[@]}" ]; then
    printf '%s\0' "@{p[@]}"
  elif [ "$nul" -eq $((@{#p[@]} - 1)) ]; then
    [ "@{#p[@]}" -gt 1 ] && printf '%s\0' "@{p[@]:0:@{#p[@]}-1}"
    printf '%s' "@{p[-1]}"
  else
    return 2
  fi
}
kept=0
small
r=$?
if [ "$r" != 0 ]; then
  [ "$r" = 1 ] || size=$(stat -c %s "$f.out")
  if [ "$size" -le "$max" ]; then
    head -c "$max" "$f.out"
  else
    half=$((max / 2))
    head -c "$half" "$f.out"
    printf '\n\0MA-CUT\0\n'
    tail -c "$half" "$f.out"
    # Output too long to send is kept whole in the home volume, which outlives the container.
    o="$HOME/.tool-output/$k.txt"
    if [ -f "$o" ] || { { [ -d "$HOME/.tool-output" ] || mkdir -p "$HOME/.tool-output"; } && cp "$f.out" "$o"; } 2>/dev/null; then kept=1; fi
  fi
fi
printf '\n\0MA-META %s %s %s %s\0' "$code" "$size" "$replayed" "$kept"
`.replace(/@\{/g, '${');

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
