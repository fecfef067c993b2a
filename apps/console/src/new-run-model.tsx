import type { ModelCatalog, TetherClient } from '@tether/client';
import type { Ref } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { CopyButton } from './copy-id.js';
import { EXAMPLE_STEPS } from './new-run-example.js';

/** pnpm start's three set-ups (scripts/start.mjs `modelBanner`), one line each. */
export const MODEL_SETUPS: readonly { command: string; what: string }[] = [
  { command: 'OPENAI_API_KEY=sk-… pnpm start', what: 'OpenAI' },
  {
    command: 'OPENAI_BASE_URL=http://localhost:11434/v1 pnpm start',
    what: 'Ollama, vLLM, or any OpenAI-compatible server',
  },
  { command: 'ANTHROPIC_API_KEY=sk-ant-… pnpm start', what: 'Anthropic' },
];

/**
 * `GET /v1/models`, read once: undefined until it answers, and for good when
 * it cannot (an older API answers 404): the form then behaves as before it
 * asked, and the API's refusal says what is missing.
 */
export function useModelCatalog(client: TetherClient): ModelCatalog | undefined {
  const [models, setModels] = useState<ModelCatalog>();
  useEffect(() => {
    const controller = new AbortController();
    // A 404 (an older API) or a failed read leaves it unknown: the notice is a help, not a gate.
    client.models({ signal: controller.signal }).then(setModels, () => {});
    return () => controller.abort();
  }, [client]);
  return models;
}

/**
 * What the page says about the model at the top: with no default model, a
 * notice of the three set-ups and the scripted example (or why there is
 * none); with one, the example as a secondary button when replay is allowed;
 * nothing while `models` is unknown.
 */
export function ModelNotice({
  models,
  onExample,
}: {
  models: ModelCatalog | undefined;
  onExample: () => void;
}) {
  if (models === undefined) return null;
  if (models.defaultProfile !== null) {
    if (!models.replay) return null;
    return (
      <p class="new-run-try">
        <button type="button" onClick={onExample} aria-describedby="try-example-hint">
          Try a scripted example
        </button>{' '}
        <span class="hint" id="try-example-hint">
          A replay script instead of the model: the same steps every time, no model call.
        </span>
      </p>
    );
  }
  const named = models.profiles.map((profile) => profile.name);
  return (
    <aside class="new-run-notice" aria-labelledby="no-model-heading">
      <h2 id="no-model-heading">
        {named.length > 0 ? 'This server has no default model' : 'No model is configured on this server'}
      </h2>
      {named.length > 0 ? (
        <p>
          A run must name one of its profiles ({named.join(', ')}) in Advanced, such as{' '}
          <code>{`{"model": {"profile": "${named[0]}"}}`}</code>, or the API refuses it. To give it a default,
          start it with one of:
        </p>
      ) : (
        <p>
          A run that names no model is refused here. To give it one, stop the server and start it again with
          one of:
        </p>
      )}
      <ul class="new-run-setups">
        {MODEL_SETUPS.map((setup) => (
          <li key={setup.command}>
            <CopyLine text={setup.command} /> <span class="hint">{setup.what}</span>
          </li>
        ))}
      </ul>
      <p class="hint">
        <code>TETHER_MODEL</code> picks another model; docs/agent.md has a recipe per provider.
      </p>
      {models.replay ? (
        <div class="new-run-try">
          <p>Or see a run without a key: a scripted model plays pnpm demo's steps.</p>
          <button type="button" class="new-run-primary" onClick={onExample}>
            Try a scripted example
          </button>
        </div>
      ) : (
        <p>
          A scripted example needs no key, but this server does not allow replay: start it with{' '}
          <code>TETHER_ALLOW_REPLAY=1</code> for one.
        </p>
      )}
    </aside>
  );
}

/**
 * What the scripted example does, shown while the form holds it: the model
 * is a replay script, no key, and the steps it plays. It takes focus when
 * the example is filled in (`panelRef`), so that a screen reader reads it.
 */
export function ExamplePanel({ panelRef, onRemove }: { panelRef: Ref<HTMLElement>; onRemove: () => void }) {
  return (
    <section class="new-run-example" aria-labelledby="example-heading" tabIndex={-1} ref={panelRef}>
      <h2 id="example-heading">The scripted example</h2>
      <p>
        The task and files below are pnpm demo's, and the request's model is its replay script: the server
        plays the script's turns instead of calling a model, so no key is needed. On the run page you will see
        it:
      </p>
      <ol>
        {EXAMPLE_STEPS.map((step) => (
          <li key={step.tool}>
            <code>{step.tool}</code>: {step.text}.
          </li>
        ))}
      </ol>
      <p>Submit starts it. The Request below shows the exact body.</p>
      <button type="button" onClick={onRemove}>
        Remove the scripted model
      </button>
    </section>
  );
}

/** A command on a line of its own, with a button that copies it. */
function CopyLine({ text }: { text: string }) {
  return (
    <>
      <code class="new-run-command">{text}</code>{' '}
      <CopyButton text={text} label={`Copy ${text}`}>
        Copy
      </CopyButton>
    </>
  );
}
