"""The rate limit of tool calls as one function in the database (agents/tools.py): the (agent, tool)
lock, the count of the last minute's calls and the call's row in one round trip, which every
recorded call (the REST API's, the gateway's admission) goes through."""

from django.db import migrations

RECORD = """
CREATE OR REPLACE FUNCTION agents_tool_call_record(
    p_agent bigint, p_tool text, p_limit integer, p_now timestamptz, p_job uuid, p_dry boolean,
    OUT a_call bigint, OUT a_used integer, OUT a_retry_after integer
) LANGUAGE plpgsql AS $$
DECLARE
    v_oldest timestamptz;
BEGIN
    -- Calls of one (agent, tool) take turns (the same lock record_call takes, re-entrant).
    PERFORM pg_advisory_xact_lock(p_agent::integer, hashtext(p_tool));
    SELECT count(*) INTO a_used FROM (
        SELECT 1 FROM agents_toolcall
        WHERE agent_id = p_agent AND tool_id = p_tool AND called_at > p_now - interval '1 minute'
        ORDER BY called_at DESC LIMIT p_limit
    ) AS recent;
    IF a_used >= p_limit THEN
        -- The call that frees a slot is the oldest of the last p_limit calls.
        SELECT called_at INTO v_oldest FROM agents_toolcall
        WHERE agent_id = p_agent AND tool_id = p_tool AND called_at > p_now - interval '1 minute'
        ORDER BY called_at DESC OFFSET p_limit - 1 LIMIT 1;
        a_retry_after := greatest(1, ceil(extract(epoch FROM v_oldest + interval '1 minute' - p_now))::integer);
        RETURN;
    END IF;
    INSERT INTO agents_toolcall (agent_id, tool_id, job_id, called_at, dry_run)
    VALUES (p_agent, p_tool, p_job, p_now, p_dry) RETURNING id INTO a_call;
END
$$;
"""


class Migration(migrations.Migration):
    dependencies = [("agents", "0018_tool_grant_requested_hash")]

    operations = [
        migrations.RunSQL(
            RECORD,
            "DROP FUNCTION IF EXISTS agents_tool_call_record(bigint, text, integer, timestamptz, uuid, boolean);",
        )
    ]
