"""Jobs, in the order of their lifecycle: ``submission`` (admission, idempotency keys and their
claims), ``leases`` (who works on a job now, and whether it is still live), ``results`` (GraphState
updates, the AgentOutput, its checks and what a finished job brings) and ``sweep`` (the beat task
that ends the jobs nobody will finish).

Each public function is one transaction that locks the job row it changes. The manifest is
enforced at both ends (seed 001, R1 and R2): a job whose payload does not match the declared
inputs is refused (422, nothing written), and a result whose data does not match the declared
outputs, or breaks the contract an output names, fails the job with the paths of what is wrong.
"""
