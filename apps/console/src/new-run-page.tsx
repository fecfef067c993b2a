import { type CreateRunBody, TetherApiError, type TetherClient, type ToolCatalog } from '@tether/client';
import type { Locale } from '@tether/protocol';
import { type Dispatch, type StateUpdater, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { exampleForm } from './new-run-example.js';
import { ExamplePanel, ModelNotice, useModelCatalog } from './new-run-model.js';
import {
  buildRequest,
  EMPTY_FORM,
  type FieldProblem,
  missingModel,
  type NewRunForm,
  type NewRunRequest,
  withFile,
} from './new-run-request.js';
import { hrefOf, navigate } from './router.js';
import './new-run.css';

// A Record over protocol's Locale, so that a new locale is a type error here. (Importing protocol's
// LOCALES would bundle its HTTP schemas, and TypeBox with them: 5 KB gzipped.)
const LOCALE_TEXT: Record<Locale, string> = { en: 'English (en)', zh: 'Chinese (zh)' };
const LOCALES = Object.keys(LOCALE_TEXT) as Locale[];

/**
 * The New run form: task, toolsets (the catalog's, its defaults checked),
 * files (dropped, chosen, or a path and its content pasted), locale, clarify
 * timeout, max steps and an Advanced JSON merged into the body. The request
 * it will send is shown as it changes; Submit posts it through the SDK and
 * opens the new run. The API's refusal is shown beside the form, which keeps
 * everything typed. Above it, what `GET /v1/models` says: a server without a
 * model gets a notice of the set-ups at once, and a server that allows replay
 * offers "Try a scripted example" (pnpm demo's run, filled in and explained).
 */
export function NewRunPage({ client }: { client: TetherClient }) {
  const [form, setForm] = useState<NewRunForm>(EMPTY_FORM);
  const { catalog, catalogError } = useToolCatalog(client, setForm);
  const models = useModelCatalog(client);
  const request = useMemo(() => buildRequest(form), [form]);
  const missing = missingModel(request.body, models);
  const { busy, error, submit, clearError } = useSubmit(client, request, missing);
  const update = (fields: Partial<NewRunForm>) => setForm((current) => ({ ...current, ...fields }));
  const { panelRef, showExample } = useExample(() => {
    setForm(exampleForm(catalog));
    clearError();
  });
  const problemOf = (field: FieldProblem['field']) =>
    request.problems.find((problem) => problem.field === field)?.message;

  return (
    <>
      <h1>New run</h1>
      <ModelNotice models={models} onExample={showExample} />
      {form.model !== undefined ? (
        <ExamplePanel panelRef={panelRef} onRemove={() => update({ model: undefined })} />
      ) : null}
      <form class="new-run" onSubmit={submit}>
        <label for="task">Task</label>
        <textarea
          id="task"
          rows={5}
          required
          value={form.input}
          onInput={(event) => update({ input: event.currentTarget.value })}
        />
        <ToolsetsField
          catalog={catalog}
          catalogError={catalogError}
          checked={form.toolsets}
          onChange={(change) => setForm((current) => ({ ...current, toolsets: change(current.toolsets) }))}
        />
        <FilesField files={form.files} onChange={(files) => update({ files })} />
        <LocaleField value={form.locale} onChange={(locale) => update({ locale })} />
        <NumberField
          id="clarify-timeout"
          label="Clarify timeout (seconds)"
          hint="How long a question waits for an answer: 1 s to 7 days. Empty: the API's default."
          value={form.clarifyTimeout}
          problem={problemOf('clarifyTimeout')}
          onInput={(clarifyTimeout) => update({ clarifyTimeout })}
        />
        <NumberField
          id="max-steps"
          label="Max steps"
          hint="The model's turns before the run stops: 1 to 1,000. Empty: the API's default."
          value={form.maxSteps}
          problem={problemOf('maxSteps')}
          onInput={(maxSteps) => update({ maxSteps })}
        />
        <AdvancedField
          value={form.advanced}
          problem={problemOf('advanced')}
          onInput={(advanced) => update({ advanced })}
        />
        <RequestPreview request={request} />
        <SubmitRow busy={busy} error={error} missing={missing} />
      </form>
    </>
  );
}

/** The tool catalog, read once; when it comes, its default toolsets are checked (unless the boxes were touched). */
function useToolCatalog(client: TetherClient, setForm: Dispatch<StateUpdater<NewRunForm>>) {
  const [catalog, setCatalog] = useState<ToolCatalog>();
  const [catalogError, setCatalogError] = useState<string>();
  useEffect(() => {
    const controller = new AbortController();
    client.tools({ signal: controller.signal }).then(
      (read) => {
        setCatalog(read);
        // The API's defaults are checked, unless the boxes were already touched.
        setForm((current) =>
          current.toolsets === undefined
            ? { ...current, toolsets: read.toolsets.filter((name) => read.defaultToolsets.includes(name)) }
            : current,
        );
      },
      (failure: unknown) => {
        if (!controller.signal.aborted)
          setCatalogError(
            `Could not read the toolsets (the run gets the API's defaults): ${String(failure)}`,
          );
      },
    );
    return () => controller.abort();
  }, [client]);
  return { catalog, catalogError };
}

/**
 * "Try a scripted example": `fill` puts the example in the form, and its
 * panel, drawn then, takes focus (each time, so a second click reads it again).
 */
function useExample(fill: () => void) {
  const panelRef = useRef<HTMLElement>(null);
  const [shown, setShown] = useState(0);
  useEffect(() => {
    if (shown > 0) panelRef.current?.focus();
  }, [shown]);
  const showExample = () => {
    fill();
    setShown((count) => count + 1);
  };
  return { panelRef, showExample };
}

/**
 * The form's submit handler, and its state: a request with problems, or
 * without a model on a server that has none (`missing`), is not sent (why
 * is shown instead); one that is opens the new run, and the API's refusal is
 * shown.
 */
function useSubmit(client: TetherClient, request: NewRunRequest, missing: string | undefined) {
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    const reasons = [...request.problems.map((problem) => problem.message), ...(missing ? [missing] : [])];
    if (reasons.length > 0) {
      setError(reasons.join(' '));
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      // The body as shown: buildRequest's object is what the preview prints.
      const { id } = await client.submit(request.body as unknown as CreateRunBody);
      navigate(hrefOf({ page: 'run', id }));
    } catch (failure) {
      setError(refusal(failure));
      setBusy(false);
    }
  };
  return { busy, error, submit, clearError: () => setError(undefined) };
}

type Toolsets = NewRunForm['toolsets'];

/**
 * A box per toolset of the catalog, with its tools named beside it. `onChange`
 * is given a function of the toolsets checked (the boxes keep the catalog's
 * order, whatever order they are checked in).
 */
function ToolsetsField({
  catalog,
  catalogError,
  checked,
  onChange,
}: {
  catalog: ToolCatalog | undefined;
  catalogError: string | undefined;
  checked: Toolsets;
  onChange: (change: (current: Toolsets) => string[]) => void;
}) {
  return (
    <fieldset>
      <legend>Toolsets</legend>
      {catalog ? (
        <ul class="toolsets">
          {catalog.toolsets.map((name) => {
            const tools = catalog.tools.filter((tool) => tool.toolset === name).map((tool) => tool.name);
            return (
              <li key={name}>
                <input
                  type="checkbox"
                  id={`toolset-${name}`}
                  aria-describedby={`toolset-${name}-tools`}
                  checked={checked?.includes(name) ?? false}
                  onChange={(event) => {
                    const on = event.currentTarget.checked;
                    onChange((current) =>
                      catalog.toolsets.filter((each) =>
                        each === name ? on : (current ?? []).includes(each),
                      ),
                    );
                  }}
                />{' '}
                <label for={`toolset-${name}`}>{name}</label>{' '}
                <span class="hint" id={`toolset-${name}-tools`}>
                  {tools.length > 0 ? tools.join(', ') : 'tools of their own'}
                </span>
              </li>
            );
          })}
        </ul>
      ) : catalogError ? (
        <p role="alert">{catalogError}</p>
      ) : (
        <p>Reading the toolsets…</p>
      )}
    </fieldset>
  );
}

function LocaleField({ value, onChange }: { value: Locale | ''; onChange: (locale: Locale | '') => void }) {
  return (
    <>
      <label for="locale">Locale</label>
      <select
        id="locale"
        value={value}
        onChange={(event) => onChange(event.currentTarget.value as Locale | '')}
      >
        <option value="">The API's default</option>
        {LOCALES.map((locale) => (
          <option value={locale} key={locale}>
            {LOCALE_TEXT[locale]}
          </option>
        ))}
      </select>
    </>
  );
}

/** "Advanced": a JSON object merged into the request, folded away; its problem replaces its hint. */
function AdvancedField({
  value,
  problem,
  onInput,
}: {
  value: string;
  problem: string | undefined;
  onInput: (value: string) => void;
}) {
  return (
    <details>
      <summary>Advanced</summary>
      <label for="advanced">Advanced (a JSON object merged into the request)</label>
      <textarea
        id="advanced"
        rows={4}
        spellcheck={false}
        aria-describedby="advanced-hint"
        aria-invalid={problem ? true : undefined}
        value={value}
        onInput={(event) => onInput(event.currentTarget.value)}
      />
      <p class="hint" id="advanced-hint">
        {problem ?? 'Other fields of POST /v1/runs, such as {"metadata": {"ticket": "T-1"}}.'}
      </p>
    </details>
  );
}

/** The body the form sends, as it changes with the fields. */
function RequestPreview({ request }: { request: NewRunRequest }) {
  return (
    <>
      <label for="request">Request</label>
      <textarea
        id="request"
        class="request"
        readOnly
        rows={Math.min(20, JSON.stringify(request.body, null, 2).split('\n').length)}
        aria-describedby="request-hint"
        value={JSON.stringify(request.body, null, 2)}
      />
      <p class="hint" id="request-hint">
        The body of POST /v1/runs, sent as shown
        {request.problems.length > 0 ? ' (the fields marked as wrong are left out)' : ''}.
      </p>
    </>
  );
}

/** Submit, the reason it will not send (before it is clicked: no model), and what went wrong (after). */
function SubmitRow({
  busy,
  error,
  missing,
}: {
  busy: boolean;
  error: string | undefined;
  missing: string | undefined;
}) {
  return (
    <>
      {error ? (
        <p role="alert" class="error-text">
          {error}
        </p>
      ) : null}
      <div>
        <button
          type="submit"
          disabled={busy}
          aria-describedby={missing && !error ? 'submit-hint' : undefined}
        >
          Submit
        </button>
        {busy ? <span aria-live="polite"> Submitting…</span> : null}
      </div>
      {missing && !error ? (
        <p class="hint" id="submit-hint">
          {missing}
        </p>
      ) : null}
    </>
  );
}

/** The API's refusal as the form shows it: its message and code, or what went wrong on the way. */
function refusal(failure: unknown): string {
  if (failure instanceof TetherApiError)
    return `The API refused the run: ${failure.message} (${failure.code})`;
  return `Could not submit the run: ${String(failure)}`;
}

function NumberField(props: {
  id: string;
  label: string;
  hint: string;
  value: string;
  problem: string | undefined;
  onInput: (value: string) => void;
}) {
  return (
    <>
      <label for={props.id}>{props.label}</label>
      {/* Text, not type=number: what is typed stays as typed, and a wrong value gets our message, not a silent ''. */}
      <input
        id={props.id}
        type="text"
        inputMode="numeric"
        autoComplete="off"
        aria-describedby={`${props.id}-hint`}
        aria-invalid={props.problem ? true : undefined}
        value={props.value}
        onInput={(event) => props.onInput(event.currentTarget.value)}
      />
      <p class={props.problem ? 'hint error-text' : 'hint'} id={`${props.id}-hint`}>
        {props.problem ?? props.hint}
      </p>
    </>
  );
}

type Files = NewRunForm['files'];

/** Files for the run's workspace: dropped on the zone, chosen, or a path and its content pasted. */
function FilesField({ files, onChange }: { files: Files; onChange: (files: Files) => void }) {
  const [path, setPath] = useState('');
  const [content, setContent] = useState('');
  const [dragging, setDragging] = useState(false);
  const [problem, setProblem] = useState<string>();
  // The latest list, for files read after a drop while others are added.
  const latest = useRef(files);
  latest.current = files;

  const addAll = async (list: FileList | null) => {
    if (!list || list.length === 0) return;
    let next = latest.current;
    // Read as UTF-8 text: the API's files are text (a binary file's bytes would not survive JSON).
    for (const file of Array.from(list)) next = withFile(next, file.name, await file.text());
    onChange(next);
  };
  const addPasted = () => {
    const trimmed = path.trim();
    if (trimmed === '') {
      setProblem('Give the file a path, such as notes/plan.md.');
      return;
    }
    setProblem(undefined);
    onChange(withFile(files, trimmed, content));
    setPath('');
    setContent('');
  };

  return (
    <fieldset>
      <legend>Files</legend>
      <p class="hint">
        Written into the run's workspace before it starts. A file of the same path is replaced.
      </p>
      {/* biome-ignore lint/a11y/noStaticElementInteractions: a drop target is for pointers only; the file input inside is its keyboard way */}
      <div
        class={dragging ? 'drop-zone dragging' : 'drop-zone'}
        data-testid="drop-zone"
        onDragOver={(event) => {
          event.preventDefault();
          setDragging(true);
        }}
        onDragLeave={() => setDragging(false)}
        onDrop={(event) => {
          event.preventDefault();
          setDragging(false);
          void addAll(event.dataTransfer?.files ?? null);
        }}
      >
        <p>Drop files here</p>
        <label for="choose-files">Or choose files</label>
        <input
          id="choose-files"
          type="file"
          multiple
          onChange={(event) => {
            const input = event.currentTarget;
            void addAll(input.files).then(() => {
              input.value = '';
            });
          }}
        />
      </div>
      <label for="file-path">Path</label>
      <input
        id="file-path"
        type="text"
        autoComplete="off"
        spellcheck={false}
        value={path}
        onInput={(event) => setPath(event.currentTarget.value)}
        onKeyDown={(event) => {
          // Enter adds the file rather than submitting the whole form.
          if (event.key === 'Enter') {
            event.preventDefault();
            addPasted();
          }
        }}
      />
      <label for="file-content">Content</label>
      <textarea
        id="file-content"
        rows={4}
        spellcheck={false}
        value={content}
        onInput={(event) => setContent(event.currentTarget.value)}
      />
      {problem ? <p role="alert">{problem}</p> : null}
      <div>
        <button type="button" onClick={addPasted}>
          Add file
        </button>
      </div>
      {files.length > 0 ? (
        <ul class="file-list" aria-label="Files to send">
          {files.map((file) => (
            <li key={file.path}>
              <code>{file.path}</code>{' '}
              <span class="hint">
                {file.content.length.toLocaleString('en')} character{file.content.length === 1 ? '' : 's'}
              </span>{' '}
              <button type="button" onClick={() => onChange(files.filter((each) => each.path !== file.path))}>
                Remove<span class="visually-hidden"> {file.path}</span>
              </button>
            </li>
          ))}
        </ul>
      ) : null}
    </fieldset>
  );
}
