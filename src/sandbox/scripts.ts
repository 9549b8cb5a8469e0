// Programs that run inside a sandbox: the exec wrapper that makes commands idempotent and caps their
// output in place, and the text editor. They are data here; the sandbox runs them, the host never does.

/**
 * Runs $MA_SCRIPT once per $MA_KEY, as a fresh bash process in a process group of its own, for at most
 * $MA_TIMEOUT_US microseconds, with the variables $MA_ENV names, and $MA_STDIN (where set) as its stdin. The first
 * attempt records which unit runs it in `$f.unit` (`unit supervisor pid deadline`) under /tmp/.ma-exec; a later
 * attempt with the same key (an activity retry) waits for or reads that unit's record instead of running again. A
 * unit `$u` keeps the request (`$u.in`, `$u.stdin`), the output (`$u.out`) and `code size` (`$u.exit`, one write).
 * Only a capped head and tail of the output leave the sandbox, followed by a trailer the host parses; the whole of
 * a longer output is kept in ~/.tool-output/$MA_KEY.txt.
 *
 * Every process started under gVisor costs a fork and an exec through its kernel, so a call's processes are started
 * before it comes: a warm unit is a supervisor (a fork of an earlier wrapper) and the command's bash, already
 * exec'd, waiting on a FIFO. Two are kept, one in each slot (`$d/warm.N`): the calls of a round of tool calls come
 * a moment apart, less than a unit takes to start. A call claims a free unit with an exclusive create, writes its
 * request, wakes the bash, which takes its variables and evals the script with its output on the unit's file, and
 * waits on a second FIFO for the supervisor's record; it ends the group itself at the deadline (TERM, then KILL
 * 5 s later). Once it has recorded the exit, the supervisor starts its slot's next unit, after the call's result is
 * on its way. A call that finds no free warm unit (the first in a sandbox, one made while another runs, one whose
 * stdin comes on the exec's stream) starts its command itself, with a watchdog subshell for the timeout, and leaves
 * warm units behind. A warm unit unused for 10 minutes that is no longer the one in its slot, or whose FIFO was
 * removed, ends. The output's size is the file offset the command's stdout shares with its supervisor's fd 3
 * (/proc/<pid>/fdinfo), and an output within the cap is copied by mapfile and printf, NUL bytes included. Only a
 * longer output, a record whose size is unknown or that does not add up, or an image without job control take
 * coreutils' stat, head, tail and cp. (`@{` stands for `${`, which a template string would take for its own.)
 */
export const EXEC_WRAPPER = String.raw`
k=$MA_KEY s=$MA_SCRIPT t=$MA_TIMEOUT_US max=$MA_MAX hasin=$MA_HAS_STDIN intext=@{MA_STDIN+1} text=$MA_STDIN
envs=()
for n in $MA_ENV; do envs+=("$n=@{!n}"); unset "$n"; done
unset MA_KEY MA_SCRIPT MA_TIMEOUT_US MA_MAX MA_HAS_STDIN MA_STDIN MA_ENV n
# The host reads stdout only; bash's own notices (a killed watchdog) go nowhere.
exec 2>/dev/null
d=/tmp/.ma-exec
f=$d/$k
[ -d "$d" ] || mkdir -p "$d" || exit 90
[ -p "$d/tick" ] || mkfifo -m 600 "$d/tick" 2>/dev/null
# The command's bash: $1 its unit, $2 the slot it is published in, $3 "go" when the request is there already. Waits
# for one byte on fd 4 (the unit's FIFO), takes the script and variables from $u.in, and evals the script with fds
# 1 and 2 on fd 3 (the unit's output) and stdin from $u.stdin where the call sent it as text. Unused for 10 minutes,
# it ends unless it is still the one published in its slot. One line: the script's line numbers, in bash's messages
# and $LINENO, then count from the eval's.
UNIT='u=$1 p=$2 go=$3; set --; if [ "$go" != go ]; then until IFS= read -r -N 1 -t 600 x <&4; do [ -p "$u.req" ] && read -r w x < "$p" && [ "$w" = "$u" ] && continue; set -C; { : > "$u.claimed"; } 2>/dev/null && exit 0; set +C; done; fi; exec 4<&-; [ -e "$u.stdin" ] && exec < "$u.stdin"; mapfile -d "" -t r < "$u.in"; for e in "@{r[@]:1}"; do export "$e"; done; exec >&3 2>&1 3>&-; eval "unset u p go w x e r; @{r[0]}"'
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
# record U PID CODE: writes unit U's "code size" once its command PID ended with CODE; fd 3 is U's output.
record() {
  local code=$3 size= a b
  if [ -e "$1.timedout" ]; then
    code=124
    kill -KILL -- "-$2" 2>/dev/null
  fi
  while read -r a b; do [ "$a" = pos: ] && size=$b && break; done < /proc/$BASHPID/fdinfo/3
  case "$size" in '' | *[!0-9]*) size=$(stat -c %s "$1.out") ;; esac
  echo "$code $size" > "$1.exit"
}
# warm N: makes a unit, publishes it in slot N ($d/warm.N), supervises its command, then starts the slot's next
# unit. Runs in the background with none of the exec's fds. A slot's units are numbered ($d/slot.N keeps the next
# number), and their FIFOs made 16 units at a time: mkfifo is a process of its own.
warm() {
  local n=$1 i u c code x fifos=()
  set +C
  read -r i < "$d/slot.$n"
  case "$i" in '' | *[!0-9]*) i=0 ;; esac
  while [ -e "$d/q.$n.$i.claimed" ]; do i=$((i + 1)); done
  echo $((i + 1)) > "$d/slot.$n"
  u=$d/q.$n.$i
  if [ ! -p "$u.req" ] || [ ! -p "$u.done" ]; then
    for ((x = i; x < i + 16; x++)); do fifos+=("$d/q.$n.$x.req" "$d/q.$n.$x.done"); done
    mkfifo -m 600 "@{fifos[@]}"
    [ -p "$u.req" ] && [ -p "$u.done" ] || return
  fi
  exec 3> "$u.out" 4<> "$u.req" || return
  set -m
  bash -c "$UNIT" bash "$u" "$d/warm.$n" < /dev/null &
  c=$!
  set +m
  exec 4>&-
  echo "$u $BASHPID $c" > "$d/warm.$n"
  wait "$c"
  code=$?
  if [ ! -e "$u.in" ]; then
    # No request came: the bash ended unused, or was killed. Nobody may claim the unit now.
    set -C
    { : > "$u.claimed"; } 2>/dev/null
    set +C
    return
  fi
  record "$u" "$c" "$code"
  # A byte for each waiter (the call, and any retry of it): a read that finds the FIFO readable and then nothing
  # left in it would block past its timeout.
  exec 3>&- 5<> "$u.done"
  printf xxxxxxxxxxxxxxxx >&5
  exec 5>&-
  # The next unit's fork and exec wait until the call's result has left the sandbox and its exec has ended: begun
  # at once, they slow that very call's end by a third.
  nap 0.05
  rewarm "$n"
}
# rewarm N: starts a warm unit for slot N in the background unless the slot's unit is free, or the slot's latest
# supervisor ($d/starting.N) still lives: it is starting its unit, or starts the next once its call has ended.
# Two slots: the calls of a round of tool calls come a moment apart, less than a unit takes to start.
rewarm() {
  local w a b
  read -r w a b < "$d/warm.$1" && [ ! -e "$w.claimed" ] && kill -0 "$a" "$b" 2>/dev/null && return
  read -r a < "$d/starting.$1" && [ "$a" != "$BASHPID" ] && kill -0 "$a" 2>/dev/null && return
  set -m
  warm "$1" < /dev/null > /dev/null 2>&1 3>&- 4>&- 5>&- &
  echo "$!" > "$d/starting.$1"
  set +m
}
# claim: takes a free warm unit (sets u sp cp), or returns 1. A slot whose unit is gone, or taken with its
# supervisor gone, gets its next unit started here: nobody else would start it.
claim() {
  local n
  for n in 0 1; do
    read -r u sp cp < "$d/warm.$n" || continue
    set -C
    if { : > "$u.claimed"; } 2>/dev/null; then
      set +C
      kill -0 "$sp" "$cp" 2>/dev/null && [ -p "$u.req" ] && return 0
    else
      set +C
      kill -0 "$sp" 2>/dev/null && continue
    fi
    rewarm "$n"
  done
  return 1
}
# await: waits for unit $u's record (its supervisor $sp, command $cp), ending the command's group at the deadline
# $end: TERM, then KILL 5 s later. A supervisor gone before it recorded leaves exit 255. Sets code and size.
await() {
  local stage=0 next fifo=
  [ -p "$u.done" ] && exec 5<> "$u.done" && fifo=1
  while :; do
    code=
    [ -e "$u.exit" ] && read -r code size < "$u.exit"
    [ -n "$code" ] && break
    clock
    if [ "$stage" = 0 ] && [ "$now" -ge "$end" ]; then
      : > "$u.timedout"
      kill -TERM -- "-$cp" 2>/dev/null
      stage=1
    fi
    if [ "$stage" = 1 ] && [ "$now" -ge $((end + 5000000)) ]; then
      kill -KILL -- "-$cp" 2>/dev/null
      stage=2
    fi
    if ! kill -0 "$sp" 2>/dev/null; then
      [ -e "$u.exit" ] && read -r code size < "$u.exit"
      [ -n "$code" ] && break
      kill -KILL -- "-$cp" 2>/dev/null
      code=255 size=
      echo "$code" > "$u.exit"
      break
    fi
    if [ -n "$fifo" ]; then next=1000000; else next=100000; fi
    [ "$stage" = 0 ] && [ $((end - now)) -lt "$next" ] && next=$((end - now))
    [ "$stage" = 1 ] && [ $((end + 5000000 - now)) -lt "$next" ] && next=$((end + 5000000 - now))
    printf -v next '%d.%06d' $((next / 1000000)) $((next % 1000000))
    if [ -n "$fifo" ]; then read -r -N 1 -t "$next" _ <&5; else nap "$next"; fi
  done
  [ -n "$fifo" ] && exec 5>&-
}
watchdog() {
  nap_until "$end"
  : > "$u.timedout"
  kill -TERM -- "-$c" 2>/dev/null
  nap_until $((end + 5000000))
  kill -KILL -- "-$c" 2>/dev/null
}
replayed=0 code= size= u= sp= cp= end=
set -C
if [ -e "$f.unit" ] || ! { : > "$f.run"; } 2>/dev/null; then
  set +C
  replayed=1
  # Another attempt runs or ran this key: its unit, then its record.
  until [ -e "$f.unit" ] && read -r u sp cp end < "$f.unit" && [ -n "$end" ]; do nap 0.1; done
  await
elif set +C; [ "$hasin" != 1 ] && claim; then
  printf '%s\0' "$s" "@{envs[@]}" > "$u.in"
  [ -n "$intext" ] && printf '%s' "$text" > "$u.stdin"
  clock
  end=$((now + t))
  echo "$u $sp $cp $end" > "$f.unit"
  exec 4<> "$u.req"
  printf g >&4
  exec 4>&-
  await
else
  # No warm unit: this call starts its command, and its watchdog, itself.
  u=$f
  printf '%s\0' "$s" "@{envs[@]}" > "$u.in"
  [ -n "$intext" ] && printf '%s' "$text" > "$u.stdin"
  exec 3> "$u.out" || exit 91
  set -m 2>/dev/null
  if [[ $- == *m* ]]; then
    # Job control: each background job leads a process group of its own.
    if [ "$hasin" = 1 ]; then bash -c "$UNIT" bash "$u" "" go & else bash -c "$UNIT" bash "$u" "" go < /dev/null & fi
  elif [ "$hasin" = 1 ]; then
    setsid bash -c "$UNIT" bash "$u" "" go <&0 &
  else
    setsid bash -c "$UNIT" bash "$u" "" go < /dev/null &
  fi
  c=$!
  clock
  end=$((now + t))
  echo "$u $$ $c $end" > "$f.unit"
  watchdog > /dev/null 2>&1 < /dev/null 3>&- &
  w=$!
  set +m
  wait "$c"
  code=$?
  # Not waited for (under gVisor that costs a few ms per call): a watchdog still dying when the wrapper exits is
  # reaped by the container's init.
  kill -KILL "$w" 2>/dev/null
  record "$u" "$c" "$code"
  exec 3>&-
  read -r code size < "$u.exit"
  # One fork here; the units start from it, in the background, once this call has ended.
  {
    nap 0.05
    rewarm 0
    rewarm 1
  } < /dev/null > /dev/null 2>&1 &
fi
if [ ! -f "$u.out" ] || [ -L "$u.out" ]; then
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
  mapfile -t -d '' p < "$u.out" || return 2
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
  [ "$r" = 1 ] || size=$(stat -c %s "$u.out")
  if [ "$size" -le "$max" ]; then
    head -c "$max" "$u.out"
  else
    half=$((max / 2))
    head -c "$half" "$u.out"
    printf '\n\0MA-CUT\0\n'
    tail -c "$half" "$u.out"
    # Output too long to send is kept whole in the home volume, which outlives the container.
    o="$HOME/.tool-output/$k.txt"
    if [ -f "$o" ] || { { [ -d "$HOME/.tool-output" ] || mkdir -p "$HOME/.tool-output"; } && cp "$u.out" "$o"; } 2>/dev/null; then kept=1; fi
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
export const EXEC_LIVE = String.raw`read -r u s p e < "/tmp/.ma-exec/$MA_KEY.unit" 2>/dev/null || exit 0; [ -e "$u.exit" ] && exit 0; tail -s 0.01 -c +1 -f --pid="$p" "$u.out" 2>/dev/null | stdbuf -o0 head -c "$MA_LIVE"`;

/** Kills the process group of a command started by EXEC_WRAPPER (used on cancellation). */
export const EXEC_KILL = String.raw`read -r u s p e < "/tmp/.ma-exec/$MA_KEY.unit" 2>/dev/null && kill -KILL -- "-$p" 2>/dev/null; true`;

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
