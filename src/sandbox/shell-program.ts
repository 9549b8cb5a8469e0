// The persistent shell: a program that runs inside a sandbox, as data here; the sandbox runs it with python3.

/**
 * `python3 -c "$MA_SHELL"` is the client: it reads `{command?, restart?, timeout_ms}` as JSON on stdin, hands
 * the command to the sandbox's shell server, prints the command's output as it comes, and exits with its status.
 * The first client starts the server (`daemon`, in a session of its own, so it outlives the call; its unix socket
 * is under /tmp and goes with the container). The server keeps one bash process and runs one command at a time
 * in it, so the working directory, variables and functions carry over. Each command is a file the shell sources,
 * with stdin from /dev/null and stderr joined to stdout; its status comes back on a pipe of its own (fd 62).
 *
 * The shell ends, to be started fresh by the next command, when `restart` asks, when a command runs past
 * `timeout_ms` (its whole process group is killed), when a command exits it, and when the client goes away
 * mid-command (the call was cancelled). `~/.ma-shell/live` is there while a shell holds state the model has not
 * been told it lost; finding it when a fresh shell starts (after the container was stopped or replaced, or a
 * cancelled call) makes the client say so before the output.
 */
export const SHELL_PY = String.raw`
import json, os, select, signal, socket, struct, subprocess, sys, time
DIR = "/tmp/.ma-shell"
SOCK = DIR + "/sock"
STATE = os.path.join(os.environ.get("HOME") or DIR, ".ma-shell")
LIVE = os.path.join(STATE, "live")
CTL = 62
RESTARTED = "[shell restarted: the previous shell is gone (its sandbox was stopped or replaced, or a call was cancelled), so the working directory and environment are reset]"

def send(c, kind, data):
    c.sendall(kind + struct.pack(">I", len(data)) + data)

def recv_exact(c, n):
    buf = b""
    while len(buf) < n:
        chunk = c.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf

def mark_live(on):
    try:
        if on:
            os.makedirs(STATE, exist_ok=True)
            open(LIVE, "w").close()
        elif os.path.exists(LIVE):
            os.unlink(LIVE)
    except OSError:
        pass

class Shell:
    def __init__(self):
        env = dict((k, v) for k, v in os.environ.items() if not k.startswith("MA_"))
        env.update(PS1="", PS2="", TERM="dumb")
        r, w = os.pipe()
        os.dup2(w, CTL)
        os.close(w)
        self.proc = subprocess.Popen(["bash", "--noprofile", "--norc"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, pass_fds=(CTL,), start_new_session=True)
        os.close(CTL)
        self.ctl = r
        self.out = self.proc.stdout.fileno()
        os.set_blocking(self.out, False)
        self.n = 0
        mark_live(True)

    def alive(self):
        return self.proc.poll() is None

    def kill(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except OSError:
                pass
        os.close(self.ctl)

    def drain(self, c):
        """Forwards what the command wrote and the pipe still holds (at most 4 MiB, for a writer that never stops)."""
        left = 4 * 1024 * 1024
        while left > 0:
            try:
                data = os.read(self.out, 65536)
            except (BlockingIOError, OSError):
                return
            if not data:
                return
            send(c, b"O", data)
            left -= len(data)

    def run(self, c, command, timeout_ms):
        """Runs one command; returns its status, or "timeout", "exited" or "gone" when the shell has to end."""
        self.n += 1
        path = "%s/cmd-%d" % (DIR, self.n)
        with open(path, "w") as fh:
            fh.write(command)
        line = "{ . %s\n} </dev/null 2>&1 %d>&-; echo $? >&%d\n" % (path, CTL, CTL)
        try:
            self.proc.stdin.write(line.encode())
            self.proc.stdin.flush()
        except OSError:
            return "exited"
        deadline = time.monotonic() + timeout_ms / 1000.0
        status = b""
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    return "timeout"
                ready = select.select([self.out, self.ctl, c], [], [], left)[0]
                if c in ready and not c.recv(1):
                    return "gone"
                if self.out in ready:
                    self.drain(c)
                if self.ctl in ready:
                    chunk = os.read(self.ctl, 64)
                    if not chunk:
                        self.drain(c)
                        return "exited"
                    status += chunk
                    if status.endswith(b"\n"):
                        self.drain(c)
                        return int(status.strip() or b"0")
        except OSError:
            return "gone"
        finally:
            try:
                os.unlink(path)
            except OSError:
                pass

def serve(state, c):
    head = recv_exact(c, 4)
    if head is None:
        return
    req = json.loads(recv_exact(c, struct.unpack(">I", head)[0]).decode())
    sh = state.get("shell")
    if sh is not None and (req.get("restart") or not sh.alive()):
        sh.kill()
        sh = state["shell"] = None
    if req.get("restart"):
        mark_live(False)
    if req.get("command") is None:
        send(c, b"E", json.dumps({"exit": 0, "restarted": True}).encode())
        return
    if sh is None:
        if os.path.exists(LIVE):
            send(c, b"N", RESTARTED.encode())
        sh = state["shell"] = Shell()
    result = sh.run(c, req["command"], req["timeout_ms"])
    if isinstance(result, int):
        send(c, b"E", json.dumps({"exit": result}).encode())
        return
    code = sh.proc.poll()
    sh.kill()
    state["shell"] = None
    if result == "gone":
        return
    mark_live(False)
    if result == "timeout":
        end = {"exit": 124, "note": "[timed out after %d ms; the shell was stopped, and the next call starts a fresh one]" % req["timeout_ms"]}
    else:
        code = sh.proc.returncode if code is None else code
        end = {"exit": code if code >= 0 else 128 - code, "note": "[the shell exited; the next call starts a fresh one]"}
    send(c, b"E", json.dumps(end).encode())

def daemon():
    import fcntl
    os.makedirs(DIR, exist_ok=True)
    lock = open(DIR + "/lock", "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return
    try:
        os.unlink(SOCK)
    except OSError:
        pass
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(SOCK)
    server.listen(16)
    state = {}
    while True:
        c = server.accept()[0]
        try:
            serve(state, c)
        except Exception:
            sh = state.pop("shell", None)
            if sh is not None:
                sh.kill()
        finally:
            c.close()

def start_daemon():
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            if os.fork() == 0:
                null = os.open("/dev/null", os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(null, fd)
                os.closerange(3, 4096)
                os.execv(sys.executable, [sys.executable, "-c", "import os; exec(os.environ.pop('MA_SHELL'))", "daemon"])
        finally:
            os._exit(0)
    os.waitpid(pid, 0)

def connect():
    for attempt in range(200):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(SOCK)
            return s
        except OSError:
            s.close()
            if attempt == 0:
                start_daemon()
            time.sleep(0.05)
    print("the shell server did not start")
    sys.exit(125)

def client():
    out = sys.stdout.buffer
    def terminated(signum, frame):
        out.write(b"\n[timed out: the shell did not answer in time]")
        out.flush()
        os._exit(124)
    signal.signal(signal.SIGTERM, terminated)
    req = json.load(sys.stdin)
    s = connect()
    body = json.dumps(req).encode()
    s.sendall(struct.pack(">I", len(body)) + body)
    at_line_start = True
    while True:
        head = recv_exact(s, 5)
        if head is None:
            out.write(b"\n[the shell ended while the command ran; the next call starts a fresh one]")
            sys.exit(125)
        kind, data = head[:1], recv_exact(s, struct.unpack(">I", head[1:])[0]) or b""
        if kind == b"O":
            out.write(data)
            at_line_start = data.endswith(b"\n")
            out.flush()
        elif kind == b"N":
            out.write(data + b"\n")
        elif kind == b"E":
            end = json.loads(data.decode())
            if end.get("restarted"):
                out.write(b"the shell has been restarted")
            if end.get("note"):
                out.write((b"" if at_line_start else b"\n") + end["note"].encode())
            out.flush()
            sys.exit(end["exit"] & 255)

if sys.argv[1:] == ["daemon"]:
    daemon()
else:
    client()
`;
