from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.generic import RedirectView

from controlplane import health_page
from controlplane.api import api
from gateway import views as mcp_views
from governance.kernel import metrics

admin.site.site_header = "Agent governance control plane"
admin.site.site_title = "Agent governance"
admin.site.index_title = "Administration"

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="reviews:inbox", permanent=False), name="home"),
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    path("mcp", mcp_views.endpoint, name="mcp"),
    path("mcp/key", mcp_views.key_endpoint, name="mcp-key"),
    path("", include("gateway.oauth.urls")),
    path("metrics", metrics.view, name="metrics"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("inbox/", include("governance.reviews.urls")),
    path("contracts/", include("governance.contracts.urls")),
    path("agents/", include("agents.urls")),
    path("sessions/", include("sessions.urls")),
    path("memory/", include("memory.urls")),
    path("gateway/", include("gateway.urls")),
    path("health/", health_page.health_view, name="health"),
    path("health/indicator/", health_page.indicator_view, name="health-indicator"),
]

handler404 = "governance.kernel.views.not_found"
handler500 = "governance.kernel.views.server_error"
