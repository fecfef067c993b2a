/**
 * "Try a scripted example": `pnpm demo`'s run, for the New run form. The
 * task, the files of scripts/demo/project and the replay script of
 * scripts/demo/replay.json are copied here so that the console bundles them;
 * new-run-example.test.ts keeps each equal to its file on disk. Replay needs
 * no model key, only a server that allows it (TETHER_ALLOW_REPLAY=1).
 */
import type { ModelSpec, ReplayScript } from '@tether/protocol';
import { EMPTY_FORM, type NewRunForm } from './new-run-request.js';

/** scripts/demo.mjs's task. */
export const EXAMPLE_TASK = 'Fix the greeting in greet.js and check that it works.';

/** scripts/demo/project, path by path, in the order `tether run --files` sends them (by name). */
export const EXAMPLE_FILES: readonly { path: string; content: string }[] = [
  {
    path: 'greet.js',
    content: `// Prints a greeting for the name given on the command line.
function greet(name) {
    if (!name) {
        name = 'world';
    }
    return "Helo, " + name;
}

console.log(greet(process.argv[2]));
`,
  },
  {
    path: 'package.json',
    content: `{
  "name": "demo-greet",
  "private": true,
  "type": "commonjs"
}
`,
  },
];

const call = (name: string, args: Record<string, unknown>) => ({ name, arguments: args });

/** scripts/demo/replay.json: the turns the scripted model plays. */
export const EXAMPLE_SCRIPT: ReplayScript = [
  {
    content: "I'll plan this first.",
    toolCalls: [
      call('todo', {
        todos: [
          { id: 'look', content: 'Look at the project', status: 'in_progress' },
          { id: 'fix', content: 'Fix the greeting', status: 'pending' },
          { id: 'check', content: 'Run it and check the output', status: 'pending' },
        ],
      }),
    ],
  },
  { toolCalls: [call('list_dir', { path: '.' })] },
  { toolCalls: [call('read_file', { path: 'greet.js' })] },
  {
    content:
      'The greeting has a typo. Fixing it with a patch (my old_string is not indented like the file: the fuzzy matcher finds it anyway).',
    toolCalls: [
      call('todo', {
        merge: true,
        todos: [
          { id: 'look', status: 'completed' },
          { id: 'fix', status: 'in_progress' },
        ],
      }),
      call('patch', {
        path: 'greet.js',
        old_string: '}\nreturn "Helo, " + name;',
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the JavaScript the patch writes into greet.js
        new_string: '}\nreturn `Hello, ${name}!`;',
      }),
    ],
  },
  {
    toolCalls: [
      call('todo', {
        merge: true,
        todos: [
          { id: 'fix', status: 'completed' },
          { id: 'check', status: 'in_progress' },
        ],
      }),
      call('bash', { command: 'node greet.js Tether' }),
    ],
  },
  {
    content: 'It prints the right greeting now. One question before I finish.',
    toolCalls: [
      call('clarify', {
        question: 'The greeting is fixed. Should I leave a note of the change in NOTES.md?',
        choices: ['Yes, write NOTES.md', 'No, that is all'],
      }),
    ],
  },
  {
    toolCalls: [
      call('write_file', {
        path: 'NOTES.md',
        content:
          '# Notes\n\n- Fixed the typo in greet.js: "Helo" is now "Hello", with an exclamation mark.\n',
      }),
      call('todo', { merge: true, todos: [{ id: 'check', status: 'completed' }] }),
    ],
  },
  {
    content:
      'Done. I fixed the greeting in greet.js ("Helo" → "Hello"), checked it with `node greet.js Tether`, and left NOTES.md (this scripted demo writes it whatever you answered; a real model would follow your answer).',
  },
];

/** The request's model: the script, played by the server instead of a model. */
export const EXAMPLE_MODEL: ModelSpec = { provider: 'replay', script: EXAMPLE_SCRIPT };

/**
 * What the example's panel says the script does: one line per tool, in the
 * order the script first calls it (the unit test holds it to the script).
 */
export const EXAMPLE_STEPS: readonly { tool: string; text: string }[] = [
  { tool: 'todo', text: 'plans the work as a todo list of three steps, and ticks them off as it goes' },
  { tool: 'list_dir', text: 'lists the workspace' },
  { tool: 'read_file', text: 'reads greet.js, which says "Helo"' },
  {
    tool: 'patch',
    text: 'fixes the typo with a patch whose old text is not indented like the file: the fuzzy matcher finds it anyway',
  },
  { tool: 'bash', text: 'runs node greet.js Tether to check the greeting' },
  {
    tool: 'clarify',
    text: 'asks you whether to leave a note in NOTES.md; the run waits on its page for your answer',
  },
  {
    tool: 'write_file',
    text: 'writes NOTES.md and finishes (whatever you answered: a script cannot listen, a real model would)',
  },
];

/** The toolsets the script's tools belong to: base, planning (todo), interaction (clarify). */
export const EXAMPLE_TOOLSETS: readonly string[] = ['base', 'planning', 'interaction'];

/**
 * The form filled with the example: its task, files and model, the catalog's
 * default toolsets with any the script needs added (in the catalog's order),
 * every other field empty for the API's default. Before the catalog is read
 * the toolsets are left out, and the API's defaults (which hold the three)
 * apply.
 */
export function exampleForm(
  catalog: { toolsets: readonly string[]; defaultToolsets: readonly string[] } | undefined,
): NewRunForm {
  const toolsets =
    catalog === undefined
      ? undefined
      : catalog.toolsets.filter(
          (name) => catalog.defaultToolsets.includes(name) || EXAMPLE_TOOLSETS.includes(name),
        );
  return { ...EMPTY_FORM, input: EXAMPLE_TASK, toolsets, files: EXAMPLE_FILES, model: EXAMPLE_MODEL };
}
