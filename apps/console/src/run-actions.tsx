import type { Run, TetherClient } from '@tether/client';
import { TERMINAL_STATUSES } from '@tether/protocol';
import { useState } from 'preact/hooks';
import { ConfirmDelete } from './confirm-delete.js';
import { CopyButton } from './copy-id.js';
import { hrefOf, navigate } from './router.js';

/**
 * What can be done with a run besides cancelling it: Retry (a failed or
 * cancelled run, as a new run), Delete (an ended one, after confirming) and
 * Copy as curl (the request that reads it, the key left as `$TETHER_API_KEY`).
 */
export function RunActions({ client, run }: { client: TetherClient; run: Run }) {
  const [error, setError] = useState<string>();
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const ended = TERMINAL_STATUSES.includes(run.status);
  const retryable = run.status === 'failed' || run.status === 'cancelled';
  const act = async (what: string, action: () => Promise<void>) => {
    setBusy(true);
    setError(undefined);
    try {
      await action();
    } catch (failure) {
      setError(`Could not ${what}: ${failure instanceof Error ? failure.message : String(failure)}`);
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      {retryable ? (
        <button
          type="button"
          disabled={busy}
          onClick={() =>
            act('retry', async () => {
              const { id } = await client.retry(run.id);
              navigate(hrefOf({ page: 'run', id }));
            })
          }
        >
          Retry
        </button>
      ) : null}
      {ended && !confirming ? (
        <button type="button" class="danger" disabled={busy} onClick={() => setConfirming(true)}>
          Delete
        </button>
      ) : null}
      <CopyButton text={curlOf(run.id)} label="Copy as curl">
        Copy as curl
      </CopyButton>
      {confirming ? (
        <ConfirmDelete
          question="Delete this run? Its events and files go with it; this cannot be undone."
          confirmLabel="Yes, delete the run"
          busy={busy}
          onConfirm={() =>
            act('delete', async () => {
              await client.delete(run.id);
              navigate(hrefOf({ page: 'runs' }));
            })
          }
          onKeep={() => setConfirming(false)}
        />
      ) : null}
      {error ? (
        <p role="alert" class="error-text">
          {error}
        </p>
      ) : null}
    </>
  );
}

/** The curl command that reads the run from this API: never the key, which the shell fills in. */
export function curlOf(runId: string): string {
  return `curl -sS ${window.location.origin}/v1/runs/${runId} -H "Authorization: Bearer $TETHER_API_KEY"`;
}
