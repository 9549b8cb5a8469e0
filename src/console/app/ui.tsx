// Small pieces every page uses: an alert for what went wrong, a session's status with what it waits for.

/** A message the screen reader announces; nothing when there is none. */
export function Alert(props: { message?: string }) {
  if (!props.message) return null;
  return (
    <p role="alert" class="error">
      {props.message}
    </p>
  );
}

export function StatusBadge(props: { status: string; detail?: string }) {
  return (
    <span class={`status status-${props.status}`}>
      {props.status}
      {props.detail && <span class="detail">: {props.detail}</span>}
    </span>
  );
}
