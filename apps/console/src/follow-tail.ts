import { useEffect, useRef } from 'preact/hooks';

/** How near the end of the page counts as at its end, for following the chat. */
const FOLLOW_SLACK_PX = 80;

/**
 * The page follows what arrives while it is scrolled to its end (the Message
 * field there); scrolled up to read, it stays put. Only a scroll up stops
 * following: a scroll event that lands after the page grew again (its own
 * scroll to the end, or the browser's) is not the reader leaving the end. Any
 * growth, whatever render or element made it, scrolls to the end.
 */
export function useFollowTail(): void {
  const following = useRef(true);
  useEffect(() => {
    const root = document.documentElement;
    const atEnd = () => window.innerHeight + window.scrollY >= root.scrollHeight - FOLLOW_SLACK_PX;
    let lastY = window.scrollY;
    const scrolled = () => {
      const y = window.scrollY;
      if (y < lastY) following.current = atEnd();
      else if (atEnd()) following.current = true;
      lastY = y;
    };
    const grown = new ResizeObserver(() => {
      if (following.current && root.scrollHeight - window.innerHeight - window.scrollY > 1) {
        window.scrollTo(0, root.scrollHeight);
      }
    });
    grown.observe(document.body);
    window.addEventListener('scroll', scrolled, { passive: true });
    return () => {
      grown.disconnect();
      window.removeEventListener('scroll', scrolled);
    };
  }, []);
}
