/** Small pieces of display shared by the views. */

/** A timestamp in the reader's locale, the exact value in the `datetime` attribute. */
export function When({ at }: { at: string }) {
  const date = new Date(at);
  return <time dateTime={at}>{Number.isNaN(date.getTime()) ? at : date.toLocaleString()}</time>;
}

/** A JSON value, indented. */
export const pretty = (value: unknown) => (value === undefined ? '' : JSON.stringify(value, null, 2));

/** An error or outcome line: alerts are read out when they appear. */
export function Notice(props: { error?: string | undefined; done?: string | undefined }) {
  if (props.error)
    return (
      <p role="alert" class="error">
        {props.error}
      </p>
    );
  if (props.done)
    return (
      <p role="status" class="done">
        {props.done}
      </p>
    );
  return null;
}
