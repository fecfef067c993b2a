/** Debian's Chromium (`apt-get install -y chromium`); downloading a browser does not work here. */
export const CHROMIUM_PATH: string;
/** The flags this machine's Chromium needs. */
export const CHROMIUM_FLAGS: string[];
