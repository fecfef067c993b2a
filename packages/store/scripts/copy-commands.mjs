// tsc compiles src/ into dist/ but copies nothing else: the Lua scripts the package reads at run
// time (src/commands/**/*.lua) go to dist/commands/, where dist/scripts.js looks for them.
import { cpSync, rmSync, statSync } from 'node:fs';

const from = new URL('../src/commands/', import.meta.url);
const to = new URL('../dist/commands/', import.meta.url);

rmSync(to, { recursive: true, force: true });
cpSync(from, to, {
  recursive: true,
  filter: (source) => statSync(source).isDirectory() || source.endsWith('.lua'),
});
