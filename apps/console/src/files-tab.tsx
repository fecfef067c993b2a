import type { RunFile, RunFileList, TetherClient } from '@tether/client';
import { useEffect, useRef, useState } from 'preact/hooks';
import { filesHref, onLinkClick } from './router.js';
import { ancestorsOf, baseName, folderView, formatBytes, kindOf, textOf } from './workspace.js';

/** Files above this size are not shown in the page (a download is offered instead). */
export const VIEW_MAX_BYTES = 512 * 1_024;

/** How long a blob: URL outlives its link (a download started from it has taken the blob by then). */
const REVOKE_AFTER_MS = 60_000;

const revoke = (url: string | undefined) => {
  if (url !== undefined) URL.revokeObjectURL(url);
};

const isNotFound = (failure: unknown) => failure instanceof Error && failure.name === 'TetherNotFoundError';

type Listing =
  | { state: 'loading' }
  | { state: 'read'; list: RunFileList; at: Date }
  | { state: 'gone' }
  | { state: 'failed'; message: string };

/**
 * A run's workspace (a crew child's is its root run's): its folders and files
 * with their sizes, and at `path` a folder's contents or a file's. Read again
 * when `version` changes (the run's events say files changed) or on "Refresh".
 */
export function FilesTab({
  client,
  runId,
  path,
  version,
}: {
  client: TetherClient;
  runId: string;
  path: string;
  version: number;
}) {
  const [listing, setListing] = useState<Listing>({ state: 'loading' });
  const [refreshes, setRefreshes] = useState(0);

  useEffect(() => {
    const controller = new AbortController();
    client.files(runId, { signal: controller.signal }).then(
      (list) => setListing({ state: 'read', list, at: new Date() }),
      (failure: unknown) => {
        if (controller.signal.aborted) return;
        if (isNotFound(failure)) setListing({ state: 'gone' });
        else setListing({ state: 'failed', message: `Could not read the files: ${String(failure)}` });
      },
    );
    return () => controller.abort();
  }, [client, runId, version, refreshes]);

  if (listing.state === 'gone') {
    return (
      <p role="alert">
        This run no longer exists (it was deleted, or its retention ended), and its files went with it.
      </p>
    );
  }
  return (
    <>
      <div class="files-bar">
        <Breadcrumbs runId={runId} path={path} />
        <button type="button" onClick={() => setRefreshes((count) => count + 1)}>
          Refresh
        </button>
      </div>
      {listing.state === 'loading' ? <p>Reading the workspace…</p> : null}
      {listing.state === 'failed' ? <p role="alert">{listing.message}</p> : null}
      {listing.state === 'read' ? (
        <Workspace
          client={client}
          runId={runId}
          path={path}
          files={listing.list.files}
          truncated={listing.list.truncated}
          at={listing.at}
          version={version + refreshes}
        />
      ) : null}
    </>
  );
}

/** Where `path` is: the workspace's top, then each folder above it, each a link. */
function Breadcrumbs({ runId, path }: { runId: string; path: string }) {
  const trail = [{ name: 'Workspace', path: '' }, ...ancestorsOf(path)];
  if (path !== '') trail.push({ name: baseName(path), path });
  return (
    <nav aria-label="Folder">
      <ol class="breadcrumbs">
        {trail.map((step, index) => (
          <li key={step.path}>
            {index === trail.length - 1 ? (
              <span aria-current="page">{step.name}</span>
            ) : (
              <a href={filesHref(runId, step.path)} onClick={onLinkClick}>
                {step.name}
              </a>
            )}
          </li>
        ))}
      </ol>
    </nav>
  );
}

function Workspace({
  client,
  runId,
  path,
  files,
  truncated,
  at,
  version,
}: {
  client: TetherClient;
  runId: string;
  path: string;
  files: RunFile[];
  truncated: boolean;
  at: Date;
  version: number;
}) {
  const what = kindOf(files, path);
  const read = (
    <p class="muted" aria-live="polite">
      {files.length === 1 ? '1 file' : `${files.length} files`}, read at {at.toLocaleTimeString()}
      {truncated ? '. Only the first 10,000 files are listed.' : ''}
    </p>
  );
  if (files.length === 0 && path === '') {
    return (
      <>
        <p>The workspace is empty: no files have been written to it yet.</p>
        {read}
      </>
    );
  }
  if (what.kind === 'missing') {
    return (
      <>
        <p role="alert">
          There is no file or folder {path} in the workspace.{' '}
          <a href={filesHref(runId, '')} onClick={onLinkClick}>
            See the workspace
          </a>
          .
        </p>
        {read}
      </>
    );
  }
  if (what.kind === 'file') {
    return (
      <>
        <FileView key={what.file.path} client={client} runId={runId} file={what.file} version={version} />
        {read}
      </>
    );
  }
  const view = folderView(files, path);
  return (
    <>
      <table class="files">
        <caption class="visually-hidden">{path === '' ? 'The workspace' : `The folder ${path}`}</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Size</th>
          </tr>
        </thead>
        <tbody>
          {view.folders.map((folder) => (
            <tr key={`d:${folder.path}`}>
              <td>
                <a href={filesHref(runId, folder.path)} onClick={onLinkClick}>
                  {folder.name}/
                </a>
              </td>
              <td>
                {folder.files === 1 ? '1 file' : `${folder.files} files`}, {formatBytes(folder.size)}
              </td>
            </tr>
          ))}
          {view.files.map((file) => (
            <tr key={`f:${file.path}`}>
              <td>
                <a href={filesHref(runId, file.path)} onClick={onLinkClick}>
                  {file.name}
                </a>
              </td>
              <td>{formatBytes(file.size)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {read}
    </>
  );
}

type Content =
  | { state: 'loading' }
  | { state: 'text'; text: string; url: string }
  | { state: 'binary'; url: string }
  | { state: 'large' }
  | { state: 'gone' }
  | { state: 'failed'; message: string };

/**
 * One file: its text in a <pre>, or, for a binary file or one above
 * {@link VIEW_MAX_BYTES}, a note saying so. Either way a download: the file is
 * fetched with the key in a header (never in a URL) and handed to the browser
 * as a blob: URL.
 */
function FileView({
  client,
  runId,
  file,
  version,
}: {
  client: TetherClient;
  runId: string;
  file: RunFile;
  version: number;
}) {
  const [content, setContent] = useState<Content>({ state: 'loading' });
  const [downloadError, setDownloadError] = useState<string>();
  // The blob: URL of the download link: revoked after a newer read replaces it, or when the view goes.
  const shownUrl = useRef<string>();
  const name = baseName(file.path);

  useEffect(() => () => revoke(shownUrl.current), []);

  useEffect(() => {
    if (file.size > VIEW_MAX_BYTES) {
      setContent({ state: 'large' });
      return undefined;
    }
    // Read again (files changed, or "Refresh"): what is shown stays until the new read is in.
    const controller = new AbortController();
    client
      .file(runId, file.path, { signal: controller.signal })
      .then(async (blob) => {
        const text = textOf(new Uint8Array(await blob.arrayBuffer()));
        if (controller.signal.aborted) return;
        const url = URL.createObjectURL(blob);
        // The link replaced may be in the middle of being clicked: its URL goes a little later.
        const replaced = shownUrl.current;
        setTimeout(() => revoke(replaced), REVOKE_AFTER_MS);
        shownUrl.current = url;
        setContent(text === undefined ? { state: 'binary', url } : { state: 'text', text, url });
      })
      .catch((failure: unknown) => {
        if (controller.signal.aborted) return;
        if (isNotFound(failure)) setContent({ state: 'gone' });
        else setContent({ state: 'failed', message: `Could not read ${file.path}: ${String(failure)}` });
      });
    return () => controller.abort();
  }, [client, runId, file.path, file.size, version]);

  /** A file too large to show is fetched only when asked for, then saved through a blob: URL. */
  const downloadLarge = async () => {
    setDownloadError(undefined);
    try {
      const url = URL.createObjectURL(await client.file(runId, file.path));
      const anchor = document.createElement('a');
      anchor.href = url;
      anchor.download = name;
      document.body.append(anchor);
      anchor.click();
      anchor.remove();
      // The browser has taken the blob once the click's download has started.
      setTimeout(() => revoke(url), REVOKE_AFTER_MS);
    } catch (failure) {
      setDownloadError(`Could not download ${file.path}: ${String(failure)}`);
    }
  };

  return (
    <section class="file" aria-labelledby="file-heading">
      <h2 id="file-heading" class="file-name">
        {file.path}
      </h2>
      <p class="muted">{formatBytes(file.size)}</p>
      {content.state === 'loading' ? <p>Reading the file…</p> : null}
      {content.state === 'gone' ? <p role="alert">{file.path} is no longer in the workspace.</p> : null}
      {content.state === 'failed' ? <p role="alert">{content.message}</p> : null}
      {content.state === 'binary' ? <p>This file is binary: it is not shown here.</p> : null}
      {content.state === 'large' ? (
        <p>This file is too large to show here (more than {formatBytes(VIEW_MAX_BYTES)}).</p>
      ) : null}
      {content.state === 'text' || content.state === 'binary' ? (
        <p>
          <a href={content.url} download={name}>
            Download {name}
          </a>
        </p>
      ) : null}
      {content.state === 'large' ? (
        <p>
          <button type="button" onClick={downloadLarge}>
            Download {name}
          </button>
        </p>
      ) : null}
      {downloadError ? <p role="alert">{downloadError}</p> : null}
      {content.state === 'text' ? (
        content.text === '' ? (
          <p>The file is empty.</p>
        ) : (
          <section
            class="file-content"
            // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling box takes focus, so that the keyboard can scroll it
            tabIndex={0}
            aria-label={`Content of ${file.path}`}
          >
            <pre>{content.text}</pre>
          </section>
        )
      ) : null}
    </section>
  );
}
