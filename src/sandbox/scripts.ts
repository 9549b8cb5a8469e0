// Programs that run inside a sandbox: the exec wrapper that makes commands idempotent and caps their
// output in place, and the text editor. They are data here; the sandbox runs them, the host never does.

/**
 * Runs $MA_SCRIPT once per $MA_KEY, as a fresh bash process in a process group of its own, for at most
 * $MA_TIMEOUT_US microseconds, with the variables $MA_ENV names, and $MA_STDIN (where set) as its stdin. Under
 * /tmp/.ma-exec, the first attempt writes the call ($f.in: the script and its variables; $f.stdin) and records which
 * unit runs it in `$f.unit` (`unit supervisor pid deadline fifos`); a later attempt with the same key (an activity
 * retry) waits for or reads that unit's record instead of running again. A unit `$u` keeps the output (`$u.out`)
 * and `code size` (`$u.exit`, one write). Only a capped head and tail of the output leave the sandbox, followed by a
 * trailer the host parses; the whole of a longer output is kept in ~/.tool-output/$MA_KEY.txt.
 *
 * Every process started under gVisor costs a fork and an exec through its kernel, so a call's processes are started
 * before it comes: a warm unit is a supervisor (a fork of an earlier wrapper) and the command's bash, already
 * exec'd, waiting on a FIFO. Two are kept, one in each slot (`$d/warm.N`): the calls of a round of tool calls come
 * a moment apart, less than a unit takes to start. A call claims a free unit with an exclusive create, writes the
 * path of its call to the bash's FIFO, which takes the script and its variables and evals it with its output on the
 * unit's file, and waits on a second FIFO for the supervisor's record; it ends the group itself at the deadline
 * (TERM, then KILL 5 s later). Once it has recorded the exit, the supervisor starts its slot's next unit, after the
 * call's result is on its way. A call that finds no free warm unit (the first in a sandbox, one made while both
 * are busy, one whose stdin comes on the exec's stream) starts its command itself, with a watchdog subshell for the
 * timeout, and leaves warm units behind. A warm unit unused for 10 minutes that is no longer the one in its slot,
 * or whose FIFO was removed, ends. The output's size is the file offset the command's stdout shares with its
 * supervisor's fd 3 (/proc/<pid>/fdinfo), and an output within the cap is copied by mapfile and printf, NUL bytes
 * included. Only a longer output, a record whose size is unknown or that does not add up, or an image without job
 * control take coreutils' stat, head, tail and cp. (`@{` stands for `${`, which a template string would take for
 * its own.)
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
# The command's bash: $1 its unit, $2 its FIFOs' prefix, $3 the slot it is published in, $4 the call's records
# prefix when the call starts it. A warm one reads that prefix as a line from fd 4 (its FIFO). It takes the script
# and variables from $f.in and stdin from $f.stdin where the call sent it as text, and evals the script with fds 1
# and 2 on fd 3 (the unit's output). Unused for 10 minutes, it ends unless it is still the one published in its slot
# and its FIFO is still the one it holds (/tmp/.ma-exec may have been removed, or made again). One line, so the
# script's line numbers, in bash's messages and $LINENO, count from the eval's.
ma_unit='u=$1 q=$2 p=$3 f=$4; set --; if [ -z "$f" ]; then until IFS= read -r -t 600 f <&4; do [ "$q.req" -ef /dev/fd/4 ] || exit 0; read -r w x < "$p" && [ "$w" = "$u" ] && continue; set -C; { : > "$u.claimed"; } 2>/dev/null && exit 0; set +C; done; exec 4<&-; fi; [ -e "$f.stdin" ] && exec < "$f.stdin"; mapfile -d "" -t r < "$f.in"; for e in "@{r[@]:1}"; do export "$e"; done; exec >&3 2>&1 3>&-; eval "unset u q p f w x e r; @{r[0]}"'
# nap S: waits S seconds on a read of a FIFO nobody writes to (a line written to it ends a nap early, and can hold
# another past its time).
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
# start N: starts warm N in the background, in a process group of its own. (Job control matters beyond the group:
# an asynchronous command started without it ignores SIGINT and SIGQUIT, and so would every command it runs.)
start() {
  started=
  set -m
  # Without job control a unit's bash would not lead a group of its own: no warm units then.
  [[ $- == *m* ]] || return
  warm "$1" < /dev/null > /dev/null 2>&1 3>&- 4>&- 5>&- &
  started=$!
  set +m
}
# warm N: makes a unit, publishes it in slot N ($d/warm.N: "starting pid" while it starts, then "unit supervisor
# bash fifos"), supervises its command, then starts the slot's next unit. A slot's units are numbered ($d/slot.N
# keeps the next number; an exclusive create of q.N.I.own gives each number once); a unit's files carry its
# supervisor's pid as well, and its FIFOs are made 16 numbers at a time: mkfifo is a process of its own.
warm() {
  local n=$1 i q u c code x fifos=()
  [ -d "$d" ] || return
  set +C
  echo "starting $BASHPID" > "$d/warm.$n"
  read -r i < "$d/slot.$n"
  case "$i" in '' | *[!0-9]*) i=0 ;; esac
  set -C
  until { : > "$d/q.$n.$i.own"; } 2>/dev/null; do
    # Taken: the next number. Any other failure (no folder, no inode left) ends this start.
    [ -e "$d/q.$n.$i.own" ] || return
    i=$((i + 1))
  done
  set +C
  echo $((i + 1)) > "$d/slot.$n"
  q=$d/q.$n.$i
  u=$q.$BASHPID
  if [ ! -p "$q.req" ] || [ ! -p "$q.done" ]; then
    for ((x = i; x < i + 16; x++)); do fifos+=("$d/q.$n.$x.req" "$d/q.$n.$x.done"); done
    mkfifo -m 600 "@{fifos[@]}"
    [ -p "$q.req" ] && [ -p "$q.done" ] || return
  fi
  exec 3> "$u.out" 4<> "$q.req" || return
  set -m
  bash -c "$ma_unit" bash "$u" "$q" "$d/warm.$n" < /dev/null &
  c=$!
  set +m
  exec 4>&-
  echo "$u $BASHPID $c $q" > "$d/warm.$n"
  wait "$c"
  code=$?
  set -C
  if { : > "$u.claimed"; } 2>/dev/null; then
    # No call claimed the unit: its bash was killed. Nobody may claim it now.
    set +C
    return
  fi
  set +C
  record "$u" "$c" "$code"
  # A byte for each waiter (the call, and any retry of it): a read that finds the FIFO readable and then nothing
  # left in it would block past its timeout.
  exec 3>&- 5<> "$q.done"
  printf xxxxxxxxxxxxxxxx >&5
  exec 5>&-
  # The next unit's fork and exec wait until the call's result has left the sandbox and its exec has ended: begun
  # at once, they slow that very call's end by a third. Only the slot's published unit has a successor.
  read -r x c < "$d/warm.$n"
  [ "$x" = "$u" ] || return
  nap 0.05
  start "$n"
  # The slot names its next supervisor before this one exits (unless that one has published already): another
  # call never sees the slot without a live supervisor.
  read -r x c < "$d/warm.$n"
  [ -n "$started" ] && [ "$x" = "$u" ] && echo "starting $started" > "$d/warm.$n"
}
# rewarm N: starts slot N's next unit unless the supervisor it names lives: that one is starting its unit, is free,
# or starts the next once its call has ended. Two slots: the calls of a round of tool calls come a moment apart,
# less than a unit takes to start.
rewarm() {
  local w a x
  if [ ! -e "$d/warm.$1" ]; then
    # A slot's first unit: one call of those that find it empty at once starts it.
    set -C
    { echo "starting $BASHPID" > "$d/warm.$1"; } 2>/dev/null || {
      set +C
      return
    }
    set +C
    start "$1"
    return
  fi
  read -r w a x < "$d/warm.$1"
  # A slot being written to reads empty for a moment.
  if [ -z "$w" ] && [ -s "$d/warm.$1" ]; then
    nap 0.01
    read -r w a x < "$d/warm.$1"
  fi
  [ -n "$a" ] && kill -0 "$a" 2>/dev/null && return
  # The supervisor the slot names is gone: its unit's bash (and a command running in it, which its call reports as
  # exit 255 anyway) goes too, or it would wait unreachable until its 10 minutes are up.
  [ "$w" != starting ] && [ -n "$x" ] && kill -KILL -- "-@{x%% *}" 2>/dev/null
  start "$1"
}
# claim: takes a free warm unit (sets u sp cp q), or returns 1. A slot whose supervisor is gone gets its next unit
# started here, since nobody else would; a unit this call took whose supervisor is gone is ended.
claim() {
  local n
  for n in 0 1; do
    read -r u sp cp q < "$d/warm.$n" || continue
    if [ "$u" = starting ]; then
      kill -0 "$sp" 2>/dev/null || rewarm "$n"
      continue
    fi
    set -C
    if { : > "$u.claimed"; } 2>/dev/null; then
      set +C
      kill -0 "$sp" 2>/dev/null && kill -0 "$cp" 2>/dev/null && [ -p "$q.req" ] && return 0
      # Taken and not usable: its bash ends, and its supervisor, where it lives, records that and starts the next.
      kill -KILL "$cp" 2>/dev/null
    else
      set +C
    fi
    kill -0 "$sp" 2>/dev/null || rewarm "$n"
  done
  return 1
}
# await: waits for unit $u's record (its supervisor $sp, command $cp, FIFOs $q where it has them), ending the
# command's group at the deadline $end: TERM, then KILL 5 s later. A supervisor gone before it recorded leaves exit
# 255. Sets code and size.
await() {
  local stage=0 next fifo=
  [ -n "$q" ] && [ -p "$q.done" ] && exec 5<> "$q.done" && fifo=1
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
    # A supervisor that lives and does not record (stopped) is not waited for past the KILL and 5 s more.
    if [ "$stage" = 2 ] && [ "$now" -ge $((end + 10000000)) ]; then
      code=124 size=
      break
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
# request: writes the script, its variables ($f.in) and its text stdin ($f.stdin); fails when /tmp cannot take them.
request() {
  printf '%s\0' "$s" "@{envs[@]}" > "$f.in" || return
  [ -z "$intext" ] || printf '%s' "$text" > "$f.stdin"
}
replayed=0 code= size= u= sp= cp= end= q= started=
set -C
if [ -e "$f.unit" ] || ! { : > "$f.run"; } 2>/dev/null; then
  set +C
  replayed=1
  # Another attempt runs or ran this key: its unit, then its record. A record of the wrapper before warm units has
  # no $f.unit; an attempt that left neither within the call's timeout is given up.
  clock
  give=$((now + t + 10000000))
  until [ -e "$f.unit" ] && read -r u sp cp end q < "$f.unit" && [ -n "$end" ]; do
    if [ -e "$f.exit" ] && read -r code size < "$f.exit" && [ -n "$code" ]; then
      u=$f
      break
    fi
    clock
    if [ "$now" -ge "$give" ]; then
      printf 'an earlier attempt of this call left no record of it'
      printf '\n\0MA-META 255 0 1 0\0'
      exit 0
    fi
    nap 0.1
  done
  [ -n "$code" ] || await
elif set +C; ! request; then
  printf 'the call could not be written to %s: is /tmp full?' "$d"
  printf '\n\0MA-META 90 0 0 0\0'
  exit 0
elif [ "$hasin" != 1 ] && claim; then
  clock
  end=$((now + t))
  echo "$u $sp $cp $end $q" > "$f.unit"
  exec 4<> "$q.req"
  printf '%s\n' "$f" >&4
  exec 4>&-
  await
else
  # No warm unit: this call starts its command, and its watchdog, itself.
  u=$f
  exec 3> "$u.out" || exit 91
  set -m 2>/dev/null
  if [[ $- == *m* ]]; then
    # Job control: each background job leads a process group of its own.
    if [ "$hasin" = 1 ]; then
      bash -c "$ma_unit" bash "$u" "" "" "$f" &
    else
      bash -c "$ma_unit" bash "$u" "" "" "$f" < /dev/null &
    fi
  elif [ "$hasin" = 1 ]; then
    setsid bash -c "$ma_unit" bash "$u" "" "" "$f" <&0 &
  else
    setsid bash -c "$ma_unit" bash "$u" "" "" "$f" < /dev/null &
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
  # One fork here, with job control (see start); the units start from it, in the background, once this call ended.
  set -m
  {
    nap 0.05
    rewarm 0
    rewarm 1
  } < /dev/null > /dev/null 2>&1 &
  set +m
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
