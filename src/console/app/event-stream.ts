// Server-Sent Events as the API writes them (`event: <type>`, `data: <json>`, `: comment`), split from a growing buffer.
/** Splits Server-Sent Events text into frames; returns the frames and the unfinished rest. */
export function parseFrames(buffer: string): { frames: { event: string; data: string }[]; rest: string } {
  const parts = buffer.split(/\r?\n\r?\n/);
  const rest = parts.pop() ?? '';
  const frames: { event: string; data: string }[] = [];
  for (const part of parts) {
    let event = 'message';
    const data: string[] = [];
    for (const line of part.split(/\r?\n/)) {
      if (line.startsWith('event:')) event = line.slice(6).trim();
      else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
    }
    if (data.length) frames.push({ event, data: data.join('\n') });
  }
  return { frames, rest };
}
