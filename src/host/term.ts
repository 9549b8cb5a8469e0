// Terminal manners for the command line: colour only on a terminal (and never with NO_COLOR), and progress
// for long work drawn on stderr, so stdout stays clean for `--json` and pipes.

type Stream = Pick<NodeJS.WriteStream, 'write'> & { isTTY?: boolean; columns?: number };

/** Colour on a terminal unless NO_COLOR is set (https://no-color.org) or TERM is dumb. */
export function colorEnabled(stream: Stream, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  return stream.isTTY === true && env.TERM !== 'dumb';
}

export interface Styles {
  dim(s: string): string;
  bold(s: string): string;
  red(s: string): string;
  green(s: string): string;
  yellow(s: string): string;
}

export function styles(on: boolean): Styles {
  const sgr = (open: number, close: number) => (s: string) => (on && s ? `\x1b[${open}m${s}\x1b[${close}m` : s);
  return { dim: sgr(2, 22), bold: sgr(1, 22), red: sgr(31, 39), green: sgr(32, 39), yellow: sgr(33, 39) };
}

export interface Progress {
  /** Prints a log line above the progress line. */
  log(msg: string): void;
  done(msg?: string): void;
  fail(msg?: string): void;
}

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/**
 * Shows that `label` is under way. On a terminal: a spinner with the elapsed time, redrawn in place on stderr,
 * with log lines printed above it. Elsewhere: the log lines only, then one line with the time it took.
 */
export function progress(
  label: string,
  stream: Stream = process.stderr,
  env: NodeJS.ProcessEnv = process.env,
): Progress {
  const started = Date.now();
  const live = stream.isTTY === true && env.TERM !== 'dumb';
  const st = styles(colorEnabled(stream, env));
  const elapsed = () => `${((Date.now() - started) / 1000).toFixed(1)} s`;
  let frame = 0;
  const line = () => `${st.dim(FRAMES[frame++ % FRAMES.length])} ${label} ${st.dim(`(${elapsed()})`)}`;
  const clear = () => live && stream.write('\r\x1b[K');
  let timer: NodeJS.Timeout | undefined;
  if (live) {
    stream.write(line());
    timer = setInterval(() => {
      clear();
      stream.write(line());
    }, 100);
    timer.unref();
  }
  const finish = (mark: string, msg: string) => {
    clearInterval(timer);
    clear();
    stream.write(`${live ? `${mark} ` : ''}${msg} (${elapsed()})\n`);
  };
  return {
    log(msg) {
      clear();
      stream.write(`${msg}\n`);
      if (live) stream.write(line());
    },
    done(msg = label) {
      finish(st.green('✓'), msg);
    },
    fail(msg = `${label} failed`) {
      finish(st.red('✗'), msg);
    },
  };
}
