/**
 * The schema keyword that says, in words, what a `pattern` accepts: the API's validation message
 * reads it ("params.id is not a run id (run ids look like …)") instead of showing the regular
 * expression. An annotation (an `x-` extension in the OpenAPI document), not a check: every
 * `pattern` a request can fail carries one (checked by test/expected-patterns.test.ts).
 */
export const EXPECTED = 'x-expected';
