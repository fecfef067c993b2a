import { useEffect } from 'preact/hooks';

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
