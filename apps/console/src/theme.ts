/** The console's colour scheme: the system's, or one chosen in Settings (kept in localStorage). */
export type Theme = 'system' | 'light' | 'dark';

const THEME_ITEM = 'tether.theme';

export function storedTheme(): Theme {
  const value = localStorage.getItem(THEME_ITEM);
  return value === 'light' || value === 'dark' ? value : 'system';
}

/** Applies `theme` to the page (`data-theme` on <html>, read by styles.css) and remembers it. */
export function applyTheme(theme: Theme, remember = true): void {
  if (theme === 'system') delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = theme;
  if (!remember) return;
  if (theme === 'system') localStorage.removeItem(THEME_ITEM);
  else localStorage.setItem(THEME_ITEM, theme);
}
