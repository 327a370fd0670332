"""Notifications: reviewers and operators are told of new inbox items, escalations, critical KPIs
and contract compliance drops by webhook (Slack-compatible or signed JSON) and email."""
