/** Small line icons drawn in the text's colour (fonts here may lack the glyphs). Decorative: hidden from assistive technology. */

const common = {
  width: 14,
  height: 14,
  viewBox: '0 0 16 16',
  fill: 'none',
  stroke: 'currentColor',
  'stroke-width': 1.5,
  'stroke-linecap': 'round',
  'stroke-linejoin': 'round',
  focusable: 'false',
} as const;

export function CopyIcon() {
  return (
    <svg {...common} aria-hidden="true">
      <rect x="5.5" y="5.5" width="8" height="8" rx="1.5" />
      <path d="M10.5 3.5v-.5a1.5 1.5 0 0 0-1.5-1.5H4A1.5 1.5 0 0 0 2.5 3v5A1.5 1.5 0 0 0 4 9.5h.5" />
    </svg>
  );
}

export function CheckIcon() {
  return (
    <svg {...common} aria-hidden="true">
      <path d="M3 8.5l3.2 3L13 4.5" />
    </svg>
  );
}

/** Tether's mark: two linked rings. */
export function BrandMark() {
  return (
    <svg {...common} width={20} height={20} aria-hidden="true">
      <circle cx="5.5" cy="8" r="3.5" />
      <circle cx="10.5" cy="8" r="3.5" />
    </svg>
  );
}
