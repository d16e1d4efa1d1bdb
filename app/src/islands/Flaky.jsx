/**
 * Its note. With `fail`, it throws on the server only: the Go server then leaves its root
 * empty, and the browser renders it from its props.
 * @param {{fail: boolean, note: string}} props
 */
export function Flaky({ fail, note }) {
  if (fail && typeof window === 'undefined') throw new Error('Flaky: failing on the server, as its props ask');
  return (
    <p className="flaky" data-testid="flaky">
      {note}
    </p>
  );
}
