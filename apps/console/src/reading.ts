import { useEffect, useState } from 'preact/hooks';

/**
 * A coalescing reader: calls while one read is on its way ask for one more
 * after it, not one each (a replay has hundreds of events that change what
 * the page shows).
 */
export function coalesce(read: () => Promise<void>): () => Promise<void> {
  let reading: Promise<void> | undefined;
  let again = false;
  const run = (): Promise<void> => {
    if (reading) {
      again = true;
      return reading;
    }
    reading = read().finally(() => {
      reading = undefined;
      if (again) {
        again = false;
        void run();
      }
    });
    return reading;
  };
  return run;
}

/**
 * Items that arrive in bursts (a stream's events), handed to `apply` once per
 * animation frame rather than one render each: returns the function to give
 * each item to.
 */
export function perFrame<T>(apply: (items: T[]) => void): (item: T) => void {
  let batch: T[] = [];
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    const items = batch;
    batch = [];
    apply(items);
  };
  return (item) => {
    batch.push(item);
    if (!scheduled) {
      scheduled = true;
      requestAnimationFrame(flush);
    }
  };
}

/**
 * Reads now and again every `intervalMs` after each read ends, until one of
 * `deps` changes or the page goes (the read in flight is aborted). `read`
 * handles its own failures; it is called again after them too.
 */
export function usePolling(
  read: (signal: AbortSignal) => Promise<void>,
  intervalMs: number,
  deps: readonly unknown[],
): void {
  useEffect(() => {
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const load = async () => {
      await read(controller.signal);
      if (!controller.signal.aborted) timer = setTimeout(load, intervalMs);
    };
    void load();
    return () => {
      controller.abort();
      clearTimeout(timer);
    };
  }, [...deps, intervalMs]);
}

/** What {@link useRead} has: the data once read, the last failure, and a way to read again. */
export interface Read<T> {
  data: T | undefined;
  error: string | undefined;
  reload: () => void;
}

/**
 * Reads once when the page opens (and when `deps` change) and again on
 * `reload`; a failure is kept as words beginning with `what` ("Could not
 * read the webhooks: …") and the data read before it stays shown.
 */
export function useRead<T>(
  what: string,
  read: (signal: AbortSignal) => Promise<T>,
  deps: readonly unknown[],
): Read<T> {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<string>();
  const [version, setVersion] = useState(0);
  useEffect(() => {
    const controller = new AbortController();
    read(controller.signal).then(
      (value) => {
        setData(value);
        setError(undefined);
      },
      (failure: unknown) => {
        if (!controller.signal.aborted) setError(`Could not read ${what}: ${String(failure)}`);
      },
    );
    return () => controller.abort();
  }, [...deps, version]);
  return { data, error, reload: () => setVersion((count) => count + 1) };
}
