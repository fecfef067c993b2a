import { useState } from 'preact/hooks';
import { CheckIcon, CopyIcon } from './icons.js';

/**
 * An id shown whole when it fits and cut with an ellipsis when it does not
 * (never broken mid-way), with a button that copies all of it. `href` makes
 * the id a link.
 */
export function CopyId({
  id,
  href,
  onClick,
}: {
  id: string;
  href?: string;
  onClick?: (event: MouseEvent) => void;
}) {
  return (
    <span class="copy-id">
      {href ? (
        <a class="id-text" href={href} onClick={onClick} title={id}>
          {id}
        </a>
      ) : (
        <code class="id-text" title={id}>
          {id}
        </code>
      )}
      <CopyButton text={id} label={`Copy ${id}`} />
    </span>
  );
}

/**
 * A button that puts `text` on the clipboard and says so for a moment; its
 * name is `label` (which should begin with its visible words). Where the page
 * has no clipboard (plain http that is not loopback), the browser's copy
 * command is used instead.
 */
export function CopyButton({ text, label, children }: { text: string; label: string; children?: string }) {
  const [copied, setCopied] = useState(false);
  // Words the label has beyond the visible ones ("Copy" + " <command>"): heard, not shown.
  const unseen = children !== undefined && label.startsWith(children) ? label.slice(children.length) : '';
  return (
    <button
      type="button"
      class={children ? 'copy' : 'copy icon'}
      aria-label={children ? undefined : label}
      title={label}
      onClick={async () => {
        await copyText(text);
        setCopied(true);
        setTimeout(() => setCopied(false), 1_500);
      }}
    >
      {children ? copied ? 'Copied' : children : copied ? <CheckIcon /> : <CopyIcon />}
      {unseen ? <span class="visually-hidden">{unseen}</span> : null}
      <span class="visually-hidden" aria-live="polite">
        {copied && !children ? 'Copied' : ''}
      </span>
    </button>
  );
}

/** The clipboard API where the page may use it (a secure context), else a hidden text area and copy. */
async function copyText(text: string): Promise<void> {
  if (navigator.clipboard && window.isSecureContext) {
    await navigator.clipboard.writeText(text);
    return;
  }
  const area = document.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.style.position = 'fixed';
  area.style.opacity = '0';
  document.body.append(area);
  area.select();
  document.execCommand('copy');
  area.remove();
}
