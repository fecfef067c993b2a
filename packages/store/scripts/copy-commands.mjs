// tsc compiles src/ into dist/ but copies nothing else: the Lua scripts the package reads at run
// time (each domain's src/<domain>/commands/**/*.lua, and the includes they share in
// src/redis/lua/) go to the same place under dist/, where each domain's commands/scripts.js looks.
import { cpSync, existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const src = fileURLToPath(new URL('../src/', import.meta.url));
const dist = fileURLToPath(new URL('../dist/', import.meta.url));

const isLua = (path) => path.endsWith('.lua');
const folders = [
  ...readdirSync(src)
    .map((domain) => join(domain, 'commands'))
    .filter((folder) => existsSync(join(src, folder)) && statSync(join(src, folder)).isDirectory()),
  join('redis', 'lua'),
];
for (const folder of folders) {
  const to = join(dist, folder);
  // The Lua files there before (tsc's output beside them stays): a script removed is not left behind.
  if (existsSync(to)) {
    for (const file of readdirSync(to, { recursive: true })) if (isLua(file)) rmSync(join(to, file));
  }
  cpSync(join(src, folder), to, {
    recursive: true,
    filter: (source) => statSync(source).isDirectory() || isLua(source),
  });
}
