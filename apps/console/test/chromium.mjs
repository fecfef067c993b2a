// Debian's Chromium as the console's browser test and `pnpm bench:console` drive it (issue 18):
// playwright-core with this executable, these flags and a fresh --user-data-dir each time.

/** Debian's Chromium (`apt-get install -y chromium`); downloading a browser does not work here. */
export const CHROMIUM_PATH = '/usr/bin/chromium';

/** The flags this machine's Chromium needs. */
export const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
