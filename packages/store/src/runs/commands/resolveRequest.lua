--[[
  Resolves one request of the waitpoint a run waits on (see includes/resolveRequest): a question's
  answer, a client tool call's output, a decision on a tool call, or a crew child's result (the repair for a child that ended
  without reporting, or is gone: the step that ends a child reports it). A crew child's decision
  is also told on its tree's root run (`approval.resolved` with `childRunId`).

  Input:
    KEYS[1] record          the run record (hash)
    KEYS[2] events          the run's event log (stream)
    KEYS[3] waitpoint       the waitpoint (hash)
    KEYS[4] waitpointResults  its requests' results (hash)
    KEYS[5] rootEvents      a crew child's root run's event log (stream; unused for any other run)

    ARGV[1] channel         the run's events channel
    ARGV[2] maxlen          events kept (approximately)
    ARGV[3] runId
    ARGV[4] waitpointId     the waitpoint the request must be of, '' for the current one
    ARGV[5] requestId
    ARGV[6] kind            'question', 'tool_output', 'child' or 'approval'
    ARGV[7] result          the answer, the output as stored (JSON), the child's result (JSON) or
                            the decision (JSON)
    ARGV[8] eventType       the event appended: `clarify.answered`, `tool.output_received`,
                            `child.finished` or `approval.resolved`
    ARGV[9] eventData       its data (JSON)
    ARGV[10] tokenHash      the SHA-256 (hex) of the answer token used, '' for none
    ARGV[11] rootChannel    the root run's events channel ('' for a run that is no crew child)
    ARGV[12] rootRunId      the root run's id ('' for a run that is no crew child)

  Output:
    'ok', 'last', or why not (see includes/resolveRequest)
]]

--- @include "includes/resolveRequest"
--- @include "includes/mirrorToRoot"

local result = resolveRequest(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6],
  ARGV[7], ARGV[8], ARGV[9], ARGV[10])
if ARGV[6] == 'approval' and (result == 'ok' or result == 'last') then
  mirrorToRoot(KEYS[5], ARGV[11], ARGV[2], ARGV[12], ARGV[3], ARGV[8], ARGV[9])
end
return result
