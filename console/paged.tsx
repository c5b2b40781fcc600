/** A list the service answers page by page (`limit`, `cursor`, `X-Next-Cursor`). */
import { useEffect, useRef, useState } from 'preact/hooks';
import { call, message } from './api.js';

export interface Paged<T> {
  /** What is loaded so far; undefined until the first page answers. */
  readonly items: T[] | undefined;
  /** Where the next page starts; undefined when there is none. */
  readonly cursor: string | undefined;
  readonly error: string | undefined;
  readonly loading: boolean;
  /** Reads the next page. */
  more(): void;
  /** Reads from the start again, as many items as are shown; what is shown stays if that fails. */
  refresh(): void;
  /** Changes what is shown (an item the service answered anew). */
  update(change: (items: T[]) => T[]): void;
}

/**
 * The pages of `url` (its query without `limit` and `cursor`), `size` at a time; none is
 * read while `url` is undefined. A new `url` starts over; an answer to an older one is dropped.
 */
export function usePaged<T>(url: string | undefined, size: number): Paged<T> {
  const [items, setItems] = useState<T[] | undefined>(undefined);
  // The address `items` were read from: those of an earlier one are not shown under a new one.
  const [readFrom, setReadFrom] = useState<string | undefined>(undefined);
  const [cursor, setCursor] = useState<string | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const [loading, setLoading] = useState(false);
  const generation = useRef(0);
  const shown = useRef<T[]>([]);

  const load = async (after: string | undefined, previous: T[], limit: number) => {
    if (url === undefined) return;
    const mine = generation.current;
    setLoading(true);
    try {
      const query = new URLSearchParams({ limit: String(Math.min(1000, limit)) });
      if (after) query.set('cursor', after);
      const { body, headers } = await call<T[]>(`${url}${url.includes('?') ? '&' : '?'}${query}`);
      if (mine !== generation.current) return;
      shown.current = [...previous, ...body];
      setItems(shown.current);
      setReadFrom(url);
      setCursor(headers.get('x-next-cursor') ?? undefined);
      setError(undefined);
    } catch (err) {
      if (mine !== generation.current) return;
      setError(message(err));
      setItems(shown.current);
      setReadFrom(url);
    } finally {
      if (mine === generation.current) setLoading(false);
    }
  };

  useEffect(() => {
    generation.current++;
    shown.current = [];
    setItems(undefined);
    setCursor(undefined);
    setError(undefined);
    void load(undefined, [], size);
  }, [url]);

  return {
    items: readFrom === url ? items : undefined,
    cursor,
    error,
    loading,
    more: () => void load(cursor, shown.current, size),
    refresh: () => void load(undefined, [], Math.max(size, shown.current.length)),
    update: (change) => {
      shown.current = change(shown.current);
      setItems(shown.current);
    },
  };
}

/** The button that reads the next page, while there is one. */
export function More<T>(props: { list: Paged<T>; label?: string }) {
  const { list } = props;
  if (!list.cursor) return null;
  return (
    <button type="button" disabled={list.loading} onClick={list.more}>
      {list.loading ? 'Loading…' : (props.label ?? 'More')}
    </button>
  );
}
