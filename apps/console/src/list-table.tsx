import type { ComponentChildren } from 'preact';

/** One column of a {@link ListTable}: its header, and what a row shows in it. */
export interface Column<T> {
  label: string;
  cell: (row: T) => ComponentChildren;
  /** A class for the column's cells (its width, `nowrap`, `num`). */
  class?: string;
}

/**
 * A list as a table that uses the width it has; on a narrow screen (under
 * 40rem) each row becomes a card whose cells say their column's name (the
 * header row is then hidden from sight, not from assistive technology).
 */
export function ListTable<T>({
  caption,
  columns,
  rows,
  rowKey,
  testId,
}: {
  caption: string;
  columns: readonly Column<T>[];
  rows: readonly T[];
  rowKey: (row: T) => string;
  testId?: string;
}) {
  return (
    <table class="list" data-testid={testId}>
      <caption class="visually-hidden">{caption}</caption>
      <thead>
        <tr>
          {columns.map((column) => (
            <th scope="col" key={column.label} class={column.class}>
              {column.label}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map((row) => (
          <tr key={rowKey(row)}>
            {columns.map((column) => (
              <td key={column.label} class={column.class} data-label={column.label}>
                {column.cell(row)}
              </td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  );
}
