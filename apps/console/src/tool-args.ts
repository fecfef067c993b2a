/**
 * A tool call's arguments as what they are, for the console to draw: a
 * command, a file and what is done to it, a todo list, a question, the tasks
 * of a delegation; anything else (or arguments that are not the JSON its
 * tool takes) as pretty JSON. `patch` calls are drawn as diffs elsewhere.
 */

export type ArgsView =
  | { kind: 'command'; command: string; timeout?: number }
  | { kind: 'file'; verb: string; path: string; note?: string; content?: string }
  | { kind: 'todos'; todos: { id: string; content: string; status: string }[]; merge: boolean }
  | { kind: 'question'; question: string; choices: string[] }
  | { kind: 'tasks'; tasks: { goal: string; context?: string }[] }
  | { kind: 'text'; label: string; text: string }
  | { kind: 'json'; text: string };

const isText = (value: unknown): value is string => typeof value === 'string';
const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export function argsView(name: string, args: string): ArgsView {
  let parsed: unknown;
  try {
    parsed = JSON.parse(args);
  } catch {
    return { kind: 'json', text: args };
  }
  const json: ArgsView = { kind: 'json', text: JSON.stringify(parsed, null, 2) };
  if (!isRecord(parsed)) return json;
  const a = parsed;
  switch (name) {
    case 'bash':
      return isText(a.command)
        ? {
            kind: 'command',
            command: a.command,
            ...(typeof a.timeout === 'number' ? { timeout: a.timeout } : {}),
          }
        : json;
    case 'read_file': {
      if (!isText(a.path)) return json;
      const from = typeof a.offset === 'number' ? a.offset : undefined;
      const limit = typeof a.limit === 'number' ? a.limit : undefined;
      const note =
        from !== undefined || limit !== undefined
          ? `lines ${from ?? 1}${limit !== undefined ? ` to ${(from ?? 1) + limit - 1}` : ' on'}`
          : undefined;
      return { kind: 'file', verb: 'Read', path: a.path, ...(note ? { note } : {}) };
    }
    case 'write_file':
      return isText(a.path)
        ? {
            kind: 'file',
            verb: 'Write',
            path: a.path,
            ...(isText(a.content) ? { content: a.content, note: `${a.content.length} characters` } : {}),
          }
        : json;
    case 'list_dir':
      return {
        kind: 'file',
        verb: 'List',
        path: isText(a.path) && a.path !== '' ? a.path : '.',
        ...(typeof a.depth === 'number' ? { note: `depth ${a.depth}` } : {}),
      };
    case 'todo': {
      const items = Array.isArray(a.todos) ? a.todos : [a];
      const todos = items.filter(isRecord).map((item) => ({
        id: isText(item.id) ? item.id : '?',
        content: isText(item.content) ? item.content : `(item ${isText(item.id) ? item.id : '?'})`,
        status: isText(item.status) ? item.status : 'pending',
      }));
      return todos.length > 0 ? { kind: 'todos', todos, merge: a.merge === true } : json;
    }
    case 'clarify':
      return isText(a.question)
        ? {
            kind: 'question',
            question: a.question,
            choices: Array.isArray(a.choices) ? a.choices.filter(isText) : [],
          }
        : json;
    case 'delegate_task':
    case 'delegate_parallel': {
      const tasks = (name === 'delegate_task' ? [a] : Array.isArray(a.tasks) ? a.tasks : [])
        .filter(isRecord)
        .filter((task) => isText(task.goal))
        .map((task) => ({
          goal: task.goal as string,
          ...(isText(task.context) ? { context: task.context } : {}),
        }));
      return tasks.length > 0 ? { kind: 'tasks', tasks } : json;
    }
    case 'escalate':
      return isText(a.reason) ? { kind: 'text', label: 'Reason', text: a.reason } : json;
    case 'memory_save':
      return isText(a.content) ? { kind: 'text', label: 'To remember', text: a.content } : json;
    default:
      return json;
  }
}

/** A call's arguments in a few words: the command, the path, the goal. */
export function callDetail(name: string, args: string): string {
  let json: unknown;
  try {
    json = JSON.parse(args);
  } catch {
    return args.slice(0, 200);
  }
  if (!isRecord(json)) return '';
  const parsed = json;
  const text = (value: unknown) => (typeof value === 'string' ? value : undefined);
  const question = text(parsed.question);
  const first =
    text(parsed.command) ??
    text(parsed.path) ??
    (question === undefined ? undefined : `“${question}”`) ??
    text(parsed.goal) ??
    text(parsed.reason) ??
    text(parsed.query) ??
    text(parsed.name);
  if (first !== undefined) return first.split('\n')[0]?.slice(0, 200) ?? '';
  if (name === 'delegate_parallel' && Array.isArray(parsed.tasks)) return `${parsed.tasks.length} tasks`;
  if (Array.isArray(parsed.todos)) return `${parsed.todos.length} items`;
  return '';
}
