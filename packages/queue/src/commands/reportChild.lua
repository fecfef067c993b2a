--[[
  Records a crew child's result in its parent's delegation, once, and appends `child.finished` to
  the parent's log: for a child that ended without reporting (its end did not name this parent),
  and for one that is gone (its keys removed by retention or a deletion before it ended).

  Input:
    KEYS[1] parentRecord    the parent's record (hash)
    KEYS[2] parentEvents    the parent's event log (stream)
    KEYS[3] parentDelegation  the parent's delegation (hash)

    ARGV[1] channel         the parent's events channel
    ARGV[2] maxlen          events kept (approximately)
    ARGV[3] parentId
    ARGV[4] childId
    ARGV[5] call            the delegation's tool call id
    ARGV[6] index           the child's task index
    ARGV[7] status          how the child ended, as its parent learns it
    ARGV[8] summary
    ARGV[9] usage           JSON
    ARGV[10] durationMs

  Output:
    1 (the child was the delegation's last to report: the parent may resume) or 0
]]

--- @include "includes/reportChild"

return reportChild(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], tonumber(ARGV[6]),
  ARGV[7], ARGV[8], ARGV[9], tonumber(ARGV[10]))
