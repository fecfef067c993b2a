import { useEffect, useState } from 'preact/hooks';

/** The time now, ticking every second while `live` (a live run's duration grows, a deadline's countdown runs). */
export function useNow(live: boolean): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    if (!live) return undefined;
    // Read at once: a countdown that starts long after the page opened must not show the time back then.
    setNow(Date.now());
    const timer = setInterval(() => setNow(Date.now()), 1_000);
    return () => clearInterval(timer);
  }, [live]);
  return now;
}
