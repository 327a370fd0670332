"""A governed call's admission in one round trip (gateway/forwarding.py ``admit``): the server still
as the process knows it and enabled, the tool's listed definition the approved one, the agent's
active session, the rate limit's row (agents_tool_call_record) and the call's log row, written as
``forwarded`` before anything is forwarded; its outcome is written once the agent has the answer."""

from django.db import migrations, models

ADMIT = """
CREATE OR REPLACE FUNCTION gateway_call_admit(
    p_agent bigint, p_tool_id text, p_server text, p_tool text, p_url text, p_internal boolean,
    p_secret text, p_digest text, p_limit integer, p_now timestamptz, p_hash text, p_arguments jsonb,
    OUT a_status text, OUT a_server jsonb, OUT a_session uuid, OUT a_call bigint, OUT a_gateway_call bigint,
    OUT a_used integer, OUT a_retry_after integer, OUT a_upstream_secrets text[], OUT a_provider_secrets text[]
) LANGUAGE plpgsql AS $$
DECLARE
    v_server gateway_upstreamserver;
    v_called_at timestamptz;
BEGIN
    a_status := 'other';  -- not the common case: the caller decides it the long way, nothing written
    SELECT * INTO v_server FROM gateway_upstreamserver WHERE name = p_server;
    IF NOT FOUND OR NOT v_server.enabled OR v_server.transport <> 'http' OR v_server.url <> p_url
            OR v_server.internal <> p_internal OR v_server.secret_name <> p_secret THEN
        RETURN;
    END IF;
    PERFORM 1 FROM gateway_toolpin
    WHERE server_id = v_server.id AND tool = p_tool AND status = 'approved' AND sha256 = p_digest;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    a_server := to_jsonb(v_server);
    SELECT session_id INTO a_session FROM ai_sessions_aisession WHERE agent_id = p_agent AND is_active LIMIT 1;
    a_upstream_secrets := ARRAY(SELECT DISTINCT secret_name FROM gateway_upstreamserver WHERE secret_name <> '');
    a_provider_secrets := ARRAY(SELECT DISTINCT secret_name FROM ai_sessions_providerprofile WHERE secret_name <> '');
    SELECT r.a_call, r.a_used, r.a_retry_after, r.a_called_at INTO a_call, a_used, a_retry_after, v_called_at
    FROM agents_tool_call_record(p_agent, p_tool_id, p_limit, p_now, NULL, false) AS r;
    IF a_call IS NULL THEN
        a_status := 'rate_limited';
        RETURN;
    END IF;
    INSERT INTO gateway_gatewaycall (
        agent_id, tool_id, server_id, session_id, arguments_hash, arguments, called_at, outcome,
        refusal, error_class, secrets_found, secret_kinds, tool_call_id
    ) VALUES (
        p_agent, p_tool_id, v_server.id, a_session, p_hash, p_arguments, v_called_at, 'forwarded', '', '', 0, '{}', a_call
    ) RETURNING id INTO a_gateway_call;
    a_status := 'admitted';
END
$$;
"""
COMPLETE = """
CREATE OR REPLACE FUNCTION gateway_call_complete(p_rows jsonb) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    -- Written once the agents have their answers: this commit does not wait for the disk. A crash
    -- of the database within a fraction of a second may lose it, and the rows stay 'forwarded'.
    PERFORM set_config('synchronous_commit', 'off', true);
    UPDATE gateway_gatewaycall AS call
    SET outcome = r.outcome, latency_ms = r.latency_ms, error_class = r.error_class, refusal = r.refusal,
        secrets_found = r.secrets_found,
        secret_kinds = ARRAY(SELECT jsonb_array_elements_text(r.secret_kinds))
    FROM jsonb_to_recordset(p_rows) AS r(
        id bigint, outcome text, latency_ms double precision, error_class text, refusal text,
        secrets_found integer, secret_kinds jsonb
    )
    WHERE call.id = r.id;
END
$$;
"""
DROP = (
    "DROP FUNCTION IF EXISTS gateway_call_admit(bigint, text, text, text, text, boolean, text, text, integer, "
    "timestamptz, text, jsonb);"
)


class Migration(migrations.Migration):
    dependencies = [
        ("agents", "0019_tool_call_record_function"),
        ("ai_sessions", "0012_session_recent"),
        ("gateway", "0008_tool_tasks"),
    ]

    operations = [
        migrations.AlterField(
            model_name="gatewaycall",
            name="outcome",
            field=models.CharField(
                choices=[
                    ("ok", "OK"),
                    ("tool_error", "Tool error"),
                    ("upstream_failed", "Upstream failed"),
                    ("refused", "Refused"),
                    ("pending", "Waiting for approval"),
                    ("dry_run", "Dry run (not forwarded)"),
                    ("forwarded", "Forwarded (no outcome recorded)"),
                ],
                max_length=20,
            ),
        ),
        migrations.RunSQL(ADMIT, DROP),
        migrations.RunSQL(
            COMPLETE,
            "DROP FUNCTION IF EXISTS gateway_call_complete(jsonb);",
        ),
    ]
