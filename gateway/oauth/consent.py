"""The consent page: an operator signed in to the plane decides whom an OAuth client acts as.

It is django-oauth-toolkit's authorization endpoint with the governance step added. The client
asks only for ``mcp`` (a client that names a subject itself is refused); the operator picks one
agent (offered only to those who may mint agents' keys) or themselves, and the grant's scope
carries the choice. The token is bound to this plane's /mcp (RFC 8707): a client that names no
resource gets that one, a client that names another is refused. Allowing and refusing are both
audited with who decided.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.db import transaction
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from oauth2_provider.exceptions import OAuthToolkitError
from oauth2_provider.forms import AllowForm
from oauth2_provider.models import get_application_model
from oauth2_provider.views import AuthorizationView
from oauthlib.oauth2.rfc6749.errors import CustomOAuth2Error, InvalidScopeError

from agents.models import Agent
from gateway.oauth import subjects, tokens
from governance.kernel.access import signed_in
from governance.kernel.audit import AuditAction
from governance.kernel.services import record

SELF = "self"


def subject_choices(request: HttpRequest) -> list[tuple[str, str]]:
    """Whom this operator may let a client act as: themselves, and every agent if they may mint
    agents' keys."""
    user = request.user
    choices = [(SELF, f"Myself ({user.get_username()}), with my own permissions")]
    if user.has_perm(tokens.ACT_AS_AGENT):
        choices += [(agent.agent_id, f"Agent {agent.agent_id}") for agent in Agent.objects.order_by("agent_id")]
    return choices


class ConsentForm(AllowForm):
    subject = forms.ChoiceField(label="Acts as", widget=forms.RadioSelect)

    def __init__(self, *args: Any, choices: list[tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["subject"].choices = choices  # no default: whom a client acts as is a choice made each time


class ConsentView(AuthorizationView):
    template_name = "gateway/oauth/consent.html"
    form_class = ConsentForm

    def get_form_kwargs(self) -> dict[str, Any]:
        return {**super().get_form_kwargs(), "choices": subject_choices(self.request)}

    def validate_authorization_request(self, request: HttpRequest) -> tuple[list[str], dict[str, Any]]:
        scopes, credentials = super().validate_authorization_request(request)
        redirect_uri = credentials.get("redirect_uri")
        if not set(scopes) <= subjects.REQUESTABLE:
            error = InvalidScopeError(
                description="Ask for the mcp scope only: whom the client acts as is the operator's choice.",
                state=credentials.get("state"),
            )
            raise OAuthToolkitError(error=error, redirect_uri=redirect_uri)
        wanted = request.GET.getlist("resource")
        ours = tokens.resource_url(request)
        if any(not tokens.same_resource(resource, ours) for resource in wanted):
            error = CustomOAuth2Error(
                error="invalid_target",
                description=f"This server issues tokens for {ours} only.",
                state=credentials.get("state"),
            )
            raise OAuthToolkitError(error=error, redirect_uri=redirect_uri)
        return scopes, credentials

    def get_initial(self) -> dict[str, Any]:
        # Every token is bound to /mcp, whether the client named it or not.
        return {**super().get_initial(), "resource": tokens.resource_url(self.request)}

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context["resource_url"] = tokens.resource_url(self.request)
        return context

    def form_invalid(self, form: ConsentForm) -> HttpResponse:
        """The page again, with what was wrong (a subject this operator may not choose)."""
        application = get_application_model().objects.filter(client_id=form.data.get("client_id", "")).first()
        if application is None:
            return HttpResponseBadRequest("Unknown client.")
        context = self.get_context_data(form=form, application=application, redirect_uri=form.data.get("redirect_uri"))
        return self.render_to_response(context, status=400)

    @transaction.atomic  # the decision's audit row and the grant it makes, together
    def form_valid(self, form: ConsentForm) -> HttpResponse:
        application = get_application_model().objects.get(client_id=form.cleaned_data["client_id"])
        actor = signed_in(self.request)
        allow = form.cleaned_data.get("allow")
        choice = form.cleaned_data["subject"]
        subject = subjects.Subject() if choice == SELF else subjects.Subject(choice)
        # The hidden fields came back from the browser: the resource is ours again, whatever they say.
        form.cleaned_data["resource"] = tokens.resource_url(self.request)
        form.cleaned_data["scope"] = subjects.granted_scope(subject)
        record(
            actor=actor,
            action=AuditAction.OAUTH_CONSENTED if allow else AuditAction.OAUTH_DENIED,
            target=application,
            client=application.name or application.client_id,
            redirect_uri=form.cleaned_data.get("redirect_uri", ""),
            acts_as=subject.scope,
        )
        return super().form_valid(form)
