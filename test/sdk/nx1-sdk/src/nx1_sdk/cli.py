"""Command-line interface for the NX1 SDK."""

import argparse
import json
import logging
import sys
from typing import Any, Dict, List, Optional
import os
import getpass

import yaml
from tabulate import tabulate

from nx1_sdk.client import NX1Client
from nx1_sdk.services.airflow_trigger_service import AirflowTriggererClient
from nx1_sdk.services.kyuubi_service import KyuubiBatchSubmitterClient
from nx1_sdk.exceptions import NX1APIError, NX1TimeoutError, NX1ValidationError
from nx1_sdk.transformations import ColumnTransformation
from nx1_sdk.profiles import (
    list_profiles,
    save_profile,
    delete_profile,
    get_profile_path,
)

def load_yaml_config(config_file):
    """Load configuration from YAML file."""
    with open(config_file, "r") as f:
        return yaml.safe_load(f)

def get_password(args, username, env_var, logger_name=None):
    """Get password from args, env var, or prompt."""
    password = getattr(args, "password", None)
    
    if not password:
        password = os.environ.get(env_var)
        if password and logger_name:
            logging.getLogger(logger_name).debug(
                f"Using password from {env_var} environment variable"
            )

    if not password:
        password = getpass.getpass(f"Password for {username}: ")
    if password and password.endswith('.jceks') and os.path.isfile(password):
        password = extract_password_from_jceks(password, username)

    return password

def extract_password_from_jceks(jceks_path, alias):
    """Extract a password from a JCEKS keystore file using the alias as lookup key."""
    import jks
    logger = logging.getLogger("kyuubi-submit")
    logger.debug(f"Loading JCEKS keystore from {jceks_path} with alias '{alias}' for kyuubi submit")
    keystore = jks.KeyStore.load(jceks_path, "none")
    entry = keystore.secret_keys.get(alias)
    if entry is None:
        raise ValueError(f"Alias '{alias}' not found in JCEKS keystore '{jceks_path}'. "
                         f"Available aliases: {list(keystore.secret_keys.keys())}")
    return entry.key.decode('utf-8')

def resolve_config(args):
    """
    Load YAML config and merge into args.
    Priority: CLI > YAML
    Mutates args in-place.
    """
    yaml_config = None
    if getattr(args, "config_file", None):
        yaml_config = load_yaml_config(args.config_file)

    if not yaml_config:
        return args

    for key, value in yaml_config.items():
        # If CLI did NOT provide this value, take from YAML
        if not hasattr(args, key) or getattr(args, key) is None:
            setattr(args, key, value)

def validate_required(args, required_fields):
    missing = [
        field for field in required_fields
        if getattr(args, field, None) is None
    ]
    if missing:
        raise ValueError(
            f"Missing required arguments: {', '.join(missing)}"
        )

    
def normalize_queue(queue_name):
    if not queue_name.startswith("root."):
        return f"root.default.{queue_name}"
    return queue_name


def inject_yunikorn_spark_configs(args):
    """Sets Spark configs for YuniKorn queue labels."""
    queue = getattr(args, "queue", None)
    if not queue:
        return
    queue = normalize_queue(queue)
    logging.getLogger('kyuubi-submit').debug(
        f"Queue name after normalizing: {queue}"
    )
    # Ensure args.conf exists
    if not getattr(args, "conf", None):
        args.conf = []
    # If conf is string, normalize to list
    if isinstance(args.conf, str):
        args.conf = [args.conf]
    args.conf.append(f"spark.kubernetes.driver.label.queue={queue}")
    args.conf.append(f"spark.kubernetes.executor.label.queue={queue}")
    

def format_output(data: Any, output_format: str = "json") -> str:
    """Format output data in the specified format."""
    if output_format == "yaml":
        return yaml.dump(data, default_flow_style=False, sort_keys=False, allow_unicode=True)
    elif output_format == "table":
        return format_as_table(data)
    else:  # json (default)
        return json.dumps(data, indent=2, default=str)


def format_as_table(data: Any) -> str:
    """Format data as a table."""
    if isinstance(data, list):
        if not data:
            return "No data"
        if isinstance(data[0], dict):
            headers = list(data[0].keys())
            rows = [[_truncate(row.get(h, "")) for h in headers] for row in data]
            return tabulate(rows, headers=headers, tablefmt="simple")
        else:
            return tabulate([[item] for item in data], tablefmt="simple")
    elif isinstance(data, dict):
        rows = [[k, _truncate(v)] for k, v in data.items()]
        return tabulate(rows, headers=["Key", "Value"], tablefmt="simple")
    else:
        return str(data)


def _truncate(value: Any, max_length: int = 80) -> str:
    """Truncate long values for table display."""
    str_val = str(value) if value is not None else ""
    if len(str_val) > max_length:
        return str_val[:max_length - 3] + "..."
    return str_val


# Global arguments parser (shared by all subcommands)
def add_global_arguments(parser: argparse.ArgumentParser) -> None:
    """Add global arguments to a parser."""
    parser.add_argument("--api-key", dest="api_key", help="API key")
    parser.add_argument("--host", help="API host")
    parser.add_argument("--profile", "-p", help="Profile name from ~/.nx1/profiles")
    parser.add_argument("--no-verify-ssl", action="store_true", help="Disable SSL verification")
    parser.add_argument("--config-file", help="YAML config file")
    parser.add_argument("--timeout", type=int, default=None, help="Request timeout (default: 30)")
    parser.add_argument("-v", "--verbose", action="store_true", help="Verbose output")
    parser.add_argument("-o", "--output", choices=["json", "yaml", "table"], default="json", help="Output format")


def main():
    """CLI entry point for NX1 SDK operations."""
    
    # Parent parser with global arguments (will be inherited by all subparsers)
    parent_parser = argparse.ArgumentParser(add_help=False)
    add_global_arguments(parent_parser)
    
    # Main parser
    parser = argparse.ArgumentParser(
        description="NX1 NLP Agent SDK CLI",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="""
Examples:
  nx1 ping
  nx1 domains -o table
  nx1 --timeout 60 jobs list
  nx1 jobs list --timeout 60 -o table
  nx1 s3 --profile dev list
  nx1 --profile staging -o yaml domains
  nx1 ingest-file --file data.csv --table customers --schema staging --timeout 300

Global options (can appear anywhere):
  --api-key KEY       API key (or NX1_API_KEY env var)
  --host URL          API host (or NX1_HOST env var)  
  --profile, -p NAME  Profile from ~/.nx1/profiles
  --timeout SECS      Request timeout (default: 30)
  --no-verify-ssl     Disable SSL verification
  --config-file       YAML config file
  -o, --output FMT    Output: json, yaml, table (default: json)
  -v, --verbose       Verbose output

Configuration Priority:
  1. CLI arguments
  2. Environment variables (NX1_API_KEY, NX1_HOST)
  3. Profile (~/.nx1/profiles)
"""
    )
    
    # Add global arguments to main parser too
    add_global_arguments(parser)
    
    subparsers = parser.add_subparsers(dest="command", help="Command to run")
    
    # -------------------------------------------------------------------------
    # Health commands
    # -------------------------------------------------------------------------
    subparsers.add_parser("ping", parents=[parent_parser], help="Health check")
    subparsers.add_parser("version", parents=[parent_parser], help="Get API version")
    
    # -------------------------------------------------------------------------
    # Metastore commands
    # -------------------------------------------------------------------------
    subparsers.add_parser("domains", parents=[parent_parser], help="List domains")
    subparsers.add_parser("catalogs", parents=[parent_parser], help="List catalogs")
    subparsers.add_parser("tags", parents=[parent_parser], help="List all tags")
    subparsers.add_parser("engines", parents=[parent_parser], help="List supported engines")
    subparsers.add_parser("catalogs-details", parents=[parent_parser], help="Get details of catalogs")
    
    schemas_p = subparsers.add_parser("schemas", parents=[parent_parser], help="List schemas")
    schemas_p.add_argument("--catalog")

    schemas_details_p = subparsers.add_parser("schemas-details", parents=[parent_parser], help="Get schemas details for a catalog")
    schemas_details_p.add_argument("--catalog", required=True)
    
    tables_p = subparsers.add_parser("tables", parents=[parent_parser], help="List tables")
    tables_p.add_argument("--catalog")
    tables_p.add_argument("--schema")
    
    tables_details_p = subparsers.add_parser("tables-details", parents=[parent_parser], help="Get tables details for a schema")
    tables_details_p.add_argument("--catalog", required=True)
    tables_details_p.add_argument("--schema", required=True)
    
    table_preview_p = subparsers.add_parser("table-preview", parents=[parent_parser], help="Preview rows from a table")
    table_preview_p.add_argument("--catalog", required=True)
    table_preview_p.add_argument("--schema", required=True)
    table_preview_p.add_argument("--table", required=True)
    table_preview_p.add_argument("--limit", type=int, default=20)
    
    table_metadata_p = subparsers.add_parser("table-metadata", parents=[parent_parser], help="Get metadata for a table from Datahub")
    table_metadata_p.add_argument("--catalog", required=True)
    table_metadata_p.add_argument("--schema", required=True)
    table_metadata_p.add_argument("--table", required=True)
    
    table_details_p = subparsers.add_parser("table-details", parents=[parent_parser], help="Get detailed information for a table")
    table_details_p.add_argument("--catalog", required=True)
    table_details_p.add_argument("--schema", required=True)
    table_details_p.add_argument("--table", required=True)
    
    columns_p = subparsers.add_parser("columns", parents=[parent_parser], help="List columns")
    columns_p.add_argument("--catalog")
    columns_p.add_argument("--schema")
    columns_p.add_argument("--table")

    create_catalog_p = subparsers.add_parser("create-catalog", parents=[parent_parser], help="Create catalog")
    create_catalog_p.add_argument("--catalog", required=True)
    create_catalog_p.add_argument("--type", required=True)
    create_catalog_p.add_argument("--properties", required=True)
    
    delete_catalog_p = subparsers.add_parser("delete-catalog", parents=[parent_parser], help="Delete catalog")
    delete_catalog_p.add_argument("--catalog", required=True)
    
    create_schema_p = subparsers.add_parser("create-schema", parents=[parent_parser], help="Create schema")
    create_schema_p.add_argument("--catalog", required=True)
    create_schema_p.add_argument("--schema", required=True)
    create_schema_p.add_argument("--properties")
    
    delete_schema_p = subparsers.add_parser("delete-schema", parents=[parent_parser], help="Delete schema")
    delete_schema_p.add_argument("--catalog", required=True)
    delete_schema_p.add_argument("--schema", required=True)
    
    create_table_p = subparsers.add_parser("create-table", parents=[parent_parser], help="Create table")
    create_table_p.add_argument("--catalog", required=True)
    create_table_p.add_argument("--schema", required=True)
    create_table_p.add_argument("--table", required=True)
    create_table_p.add_argument("--columns", required=True)
    create_table_p.add_argument("--properties")
    
    delete_table_p = subparsers.add_parser("delete-table", parents=[parent_parser], help="Delete table")
    delete_table_p.add_argument("--catalog", required=True)
    delete_table_p.add_argument("--schema", required=True)
    delete_table_p.add_argument("--table", required=True)
    
    alter_table_p = subparsers.add_parser("alter-table", parents=[parent_parser], help="Alter table")
    alter_table_p.add_argument("--catalog", required=True)
    alter_table_p.add_argument("--schema", required=True)
    alter_table_p.add_argument("--table", required=True)
    alter_table_p.add_argument("--operations", required=True)

    subparsers.add_parser("tag-associations", parents=[parent_parser],
        help="List all tag-role associations")

    tag_assoc_p = subparsers.add_parser("create-tag-role", parents=[parent_parser],
        help="Associate a role with a tag")
    tag_assoc_p.add_argument("--tag", required=True, help="Tag name")
    tag_assoc_p.add_argument("--role", required=True, help="Role name")
    tag_assoc_p.add_argument("--readonly", action="store_true",
        help="Grant read-only access (default: read-write)")

    del_assoc_p = subparsers.add_parser("delete-tag-role", parents=[parent_parser],
        help="Remove a role-tag association")
    del_assoc_p.add_argument("--tag", required=True, help="Tag name")
    del_assoc_p.add_argument("--role", required=True, help="Role name")
    
    # -------------------------------------------------------------------------
    # Query commands
    # -------------------------------------------------------------------------
    ask_p = subparsers.add_parser("ask", parents=[parent_parser], help="Ask a question")
    ask_p.add_argument("--domain", required=True)
    ask_p.add_argument("--prompt", required=True)

    suggest_p = subparsers.add_parser("suggest", parents=[parent_parser], help="Get suggestions")
    suggest_p.add_argument("--domain", required=True)

    query_p = subparsers.add_parser("query", parents=[parent_parser], help="Query management")
    query_sub = query_p.add_subparsers(dest="query_command")

    query_list_p = query_sub.add_parser("list", parents=[parent_parser], help="List recent queries")
    query_list_p.add_argument("--limit", type=int, default=20)

    query_del_p = query_sub.add_parser("delete", parents=[parent_parser], help="Delete a query")
    query_del_p.add_argument("query_id", help="UUID of the query to delete")

    query_create_p = query_sub.add_parser("create", parents=[parent_parser],
        help="Create a query from a suggestion ID")
    query_create_p.add_argument("--suggestion-id", required=True, dest="suggestion_id")

    query_submit_p = query_sub.add_parser("submit", parents=[parent_parser],
        help="Submit a raw SQL query")
    query_submit_p.add_argument("--query", required=True, help="SQL query string")
    query_submit_p.add_argument("--domain", help="Domain URN")

    query_sched_p = query_sub.add_parser("schedule", parents=[parent_parser],
        help="Schedule a query on a cron")
    query_sched_p.add_argument("--name", required=True, help="Schedule name")
    query_sched_p.add_argument("--cron", required=True, help="Cron expression")
    query_sched_p.add_argument("--card-url", dest="card_url",
        help="Card URL (mutually exclusive with --query-id)")
    query_sched_p.add_argument("--query-id", dest="query_id",
        help="Query ID (mutually exclusive with --card-url)")

    query_embed_p = query_sub.add_parser("embed-token", parents=[parent_parser],
        help="Get embed access token for a query visualization")
    query_embed_p.add_argument("--query-id", required=True, dest="query_id")
    
    # -------------------------------------------------------------------------
    # File Ingestion
    # -------------------------------------------------------------------------
    ingest_file_p = subparsers.add_parser("ingest-file", parents=[parent_parser], help="Upload and ingest local file")
    ingest_file_p.add_argument("--file", dest="file_path")
    ingest_file_p.add_argument("--table")
    ingest_file_p.add_argument("--schema", dest="schema_name")
    ingest_file_p.add_argument("--name", dest="job_name", help="Custom job name")
    ingest_file_p.add_argument("--mode", default="overwrite", choices=["append", "overwrite", "merge"])
    ingest_file_p.add_argument("--merge-keys", help="Comma-separated merge keys")
    ingest_file_p.add_argument("--delimiter", default=",")
    ingest_file_p.add_argument("--header", default="true", choices=["true", "false"])
    ingest_file_p.add_argument("--domain", dest="ingest_domain")
    ingest_file_p.add_argument("--tags", help="Comma-separated tags")
    ingest_file_p.add_argument("--cast", action="append", metavar="COL:TYPE")
    ingest_file_p.add_argument("--rename", action="append", metavar="OLD:NEW")
    ingest_file_p.add_argument("--encrypt", action="append", metavar="COL")
    ingest_file_p.add_argument("--no-wait", action="store_true")
    ingest_file_p.add_argument("--max-wait", type=int, default=300)
    
    # Direct Ingestion
    ingest_p = subparsers.add_parser("ingest", parents=[parent_parser], help="Submit ingestion from S3")
    ingest_p.add_argument("--name")
    ingest_p.add_argument("--table")
    ingest_p.add_argument("--schema", dest="schema_name")
    ingest_p.add_argument("--type", dest="ingesttype", default="file", choices=["file", "jdbc", "lakehouse"])
    ingest_p.add_argument("--mode", default="overwrite", choices=["append", "overwrite", "merge"])
    ingest_p.add_argument("--file-path")
    ingest_p.add_argument("--file-id")
    ingest_p.add_argument("--format", dest="file_format", default=None,
        help="File format (csv, json, parquet, xls, xlsx). Auto-detected from --file-path if not given.")
    ingest_p.add_argument("--delimiter", default=",")
    ingest_p.add_argument("--header", default="true", choices=["true", "false"])
    ingest_p.add_argument("--merge-keys")
    ingest_p.add_argument("--domain", dest="ingest_domain")
    ingest_p.add_argument("--tags")
    ingest_p.add_argument("--schedule")
    
    subparsers.add_parser("ingest-options", parents=[parent_parser], help="Get file ingestion options")
    
    # -------------------------------------------------------------------------
    # Jobs commands
    # -------------------------------------------------------------------------
    jobs_p = subparsers.add_parser("jobs", parents=[parent_parser], help="Job management")
    jobs_sub = jobs_p.add_subparsers(dest="jobs_command")
    jobs_sub.add_parser("list", parents=[parent_parser])
    jobs_get = jobs_sub.add_parser("get", parents=[parent_parser])
    jobs_get.add_argument("job_id")
    jobs_del = jobs_sub.add_parser("delete", parents=[parent_parser])
    jobs_del.add_argument("job_id")
    jobs_trig = jobs_sub.add_parser("trigger", parents=[parent_parser])
    jobs_trig.add_argument("job_id")
    jobs_wait = jobs_sub.add_parser("wait", parents=[parent_parser])
    jobs_wait.add_argument("job_id")
    jobs_wait.add_argument("--max-wait", type=int, default=300)
    jobs_wait.add_argument("--poll-interval", type=int, default=5)

    jobs_create = jobs_sub.add_parser("create", parents=[parent_parser],
        help="Create a new job record")
    jobs_create.add_argument("--job-name", required=True, dest="job_name")
    jobs_create.add_argument("--job-type", required=True, dest="job_type",
        choices=["airflow.dataeng", "airflow.nlp", "airflow.ingest", "airflow.airbyte", "mirror"],
        help="Job type: airflow.dataeng | airflow.nlp | airflow.ingest | airflow.airbyte | mirror")
    jobs_create.add_argument("--schedule", help="Cron expression (optional)")

    jobs_upd = jobs_sub.add_parser("update-status", parents=[parent_parser],
        help="Update a job's status")
    jobs_upd.add_argument("job_id")
    jobs_upd.add_argument("--status", required=True,
        choices=["PENDING", "RUNNING", "COMPLETED", "FAILED", "CANCELLED"])
    jobs_upd.add_argument("--message", dest="status_message",
        help="Optional status message")
    
    # -------------------------------------------------------------------------
    # Files commands
    # -------------------------------------------------------------------------
    files_p = subparsers.add_parser("files", parents=[parent_parser], help="File management")
    files_sub = files_p.add_subparsers(dest="files_command")
    files_sub.add_parser("list", parents=[parent_parser])
    files_up = files_sub.add_parser("upload", parents=[parent_parser])
    files_up.add_argument("file_path")
    files_up.add_argument("--name")
    files_url = files_sub.add_parser("upload-url", parents=[parent_parser])
    files_url.add_argument("url")
    files_url.add_argument("--name")
    files_get = files_sub.add_parser("get", parents=[parent_parser])
    files_get.add_argument("file_id")
    files_del = files_sub.add_parser("delete", parents=[parent_parser])
    files_del.add_argument("file_id")
    files_dl = files_sub.add_parser("download", parents=[parent_parser],
        help="Download file content to disk")
    files_dl.add_argument("file_id", help="UUID of the file to download")
    files_dl.add_argument("--out", dest="output_path",
        help="Local path to write file (default: use server filename)")
    
    # -------------------------------------------------------------------------
    # S3 commands
    # -------------------------------------------------------------------------
    s3_p = subparsers.add_parser("s3", parents=[parent_parser], help="S3 bucket management")
    s3_sub = s3_p.add_subparsers(dest="s3_command")
    s3_sub.add_parser("list", parents=[parent_parser])
    s3_sub.add_parser("refresh", parents=[parent_parser])
    s3_get = s3_sub.add_parser("get", parents=[parent_parser])
    s3_get.add_argument("bucket_name")
    s3_create = s3_sub.add_parser("create", parents=[parent_parser])
    s3_create.add_argument("--bucket")
    s3_create.add_argument("--endpoint")
    s3_create.add_argument("--access-key")
    s3_create.add_argument("--secret-key")
    s3_del = s3_sub.add_parser("delete", parents=[parent_parser])
    s3_del.add_argument("bucket_name")
    
    # -------------------------------------------------------------------------
    # DQ commands
    # -------------------------------------------------------------------------
    dq_p = subparsers.add_parser("dq", parents=[parent_parser], help="Data quality")
    dq_sub = dq_p.add_subparsers(dest="dq_command")
    dq_suggest = dq_sub.add_parser("suggest", parents=[parent_parser])
    dq_suggest.add_argument("--table")
    dq_suggest.add_argument("--request")
    dq_rules = dq_sub.add_parser("rules", parents=[parent_parser])
    dq_rules.add_argument("--table")
    dq_rules.add_argument("--accepted-only", action="store_true")
    dq_run = dq_sub.add_parser("run", parents=[parent_parser])
    dq_run.add_argument("--table")
    dq_acc = dq_sub.add_parser("accept", parents=[parent_parser])
    dq_acc.add_argument("dq_id")
    dq_del = dq_sub.add_parser("delete", parents=[parent_parser])
    dq_del.add_argument("dq_id")
    
    # -------------------------------------------------------------------------
    # Data Products commands
    # -------------------------------------------------------------------------
    dp_p = subparsers.add_parser("dataproducts", parents=[parent_parser], help="Data products")
    dp_sub = dp_p.add_subparsers(dest="dp_command")
    dp_sub.add_parser("list", parents=[parent_parser])
    dp_del = dp_sub.add_parser("delete", parents=[parent_parser])
    dp_del.add_argument("dataproduct_id")
    
    # -------------------------------------------------------------------------
    # Apps commands
    # -------------------------------------------------------------------------
    apps_p = subparsers.add_parser("apps", parents=[parent_parser], help="Apps management")
    apps_sub = apps_p.add_subparsers(dest="apps_command")
    apps_sub.add_parser("list", parents=[parent_parser])
    apps_create = apps_sub.add_parser("create", parents=[parent_parser])
    apps_create.add_argument("--name")
    apps_get = apps_sub.add_parser("get", parents=[parent_parser])
    apps_get.add_argument("app_id")
    apps_del = apps_sub.add_parser("delete", parents=[parent_parser])
    apps_del.add_argument("app_id")
    apps_vers = apps_sub.add_parser("versions", parents=[parent_parser])
    apps_vers.add_argument("--app-id")
    apps_cv = apps_sub.add_parser("create-version", parents=[parent_parser])
    apps_cv.add_argument("--app-id")
    apps_cv.add_argument("--name")
    apps_act = apps_sub.add_parser("activate", parents=[parent_parser])
    apps_act.add_argument("version_id")
    apps_roles = apps_sub.add_parser("roles", parents=[parent_parser])
    apps_roles.add_argument("--app-id")
    apps_cr = apps_sub.add_parser("create-role", parents=[parent_parser])
    apps_cr.add_argument("--app-id")
    apps_cr.add_argument("--name")
    apps_comp = apps_sub.add_parser("components", parents=[parent_parser])
    apps_comp.add_argument("--version-id")
    apps_dag = apps_sub.add_parser("add-dag", parents=[parent_parser])
    apps_dag.add_argument("--version-id")
    apps_dag.add_argument("--file")
    apps_dag.add_argument("--name")
    apps_deploy = apps_sub.add_parser("deploy", parents=[parent_parser], help="Full app deployment")
    apps_deploy.add_argument("--app-name", required=True, help="App name")
    apps_deploy.add_argument("--version", required=True, help="Version name")
    apps_deploy.add_argument("--dags", help="Comma separated list of DAG file paths")
    apps_deploy.add_argument("--artifacts", help="Comma separated list of artifact file paths")

    apps_upd = apps_sub.add_parser("update", parents=[parent_parser],
        help="Update an app's name")
    apps_upd.add_argument("app_id")
    apps_upd.add_argument("--name", required=True, help="New app name")

    apps_dver = apps_sub.add_parser("delete-version", parents=[parent_parser],
        help="Delete an app version (cannot delete ACTIVE versions)")
    apps_dver.add_argument("version_id")

    apps_drole = apps_sub.add_parser("delete-role", parents=[parent_parser],
        help="Delete an app role")
    apps_drole.add_argument("--app-id", required=True, dest="app_id")
    apps_drole.add_argument("--role-id", required=True, dest="role_id")

    apps_artifact = apps_sub.add_parser("add-artifact", parents=[parent_parser],
        help="Upload an artifact to an app version")
    apps_artifact.add_argument("--version-id", required=True, dest="version_id")
    apps_artifact.add_argument("--file", required=True, help="Local file path")
    apps_artifact.add_argument("--name", help="Override filename")

    apps_dcomp = apps_sub.add_parser("delete-component", parents=[parent_parser],
        help="Delete an app component")
    apps_dcomp.add_argument("component_id")

    # -------------------------------------------------------------------------
    # Mirror commands
    # -------------------------------------------------------------------------
    mirror_p = subparsers.add_parser("mirror", parents=[parent_parser],
        help="Data mirroring jobs")
    mirror_sub = mirror_p.add_subparsers(dest="mirror_command")

    mirror_create = mirror_sub.add_parser("create", parents=[parent_parser],
        help="Create a mirroring job")
    mirror_create.add_argument("--name", required=True)
    mirror_create.add_argument("--dbtype", required=True,
        choices=["postgres", "mariadb", "mssql", "mysql", "oracle", "db2"])
    mirror_create.add_argument("--include-list", required=True,
        help="Format: schema.table e.g. public.employees")
    mirror_create.add_argument("--host-name", required=True)
    mirror_create.add_argument("--port", required=True, type=int)
    mirror_create.add_argument("--user", required=True)
    mirror_create.add_argument("--password", required=True)
    mirror_create.add_argument("--dbname", required=True)
    mirror_create.add_argument("--schemas")
    mirror_create.add_argument("--schedule")

    mirror_del = mirror_sub.add_parser("delete", parents=[parent_parser],
        help="Delete a mirroring job")
    mirror_del.add_argument("job_id", help="UUID of the mirroring job to delete")
    
    # -------------------------------------------------------------------------
    # Shares commands
    # -------------------------------------------------------------------------
    shares_p = subparsers.add_parser("shares", parents=[parent_parser], help="Data shares")
    shares_sub = shares_p.add_subparsers(dest="shares_command")
    shares_sub.add_parser("list", parents=[parent_parser])
    shares_get = shares_sub.add_parser("get", parents=[parent_parser])
    shares_get.add_argument("share_id")
    shares_del = shares_sub.add_parser("delete", parents=[parent_parser])
    shares_del.add_argument("share_id")
    
    # -------------------------------------------------------------------------
    # Crews commands
    # -------------------------------------------------------------------------
    crews_p = subparsers.add_parser("crews", parents=[parent_parser], help="AI Crews")
    crews_sub = crews_p.add_subparsers(dest="crews_command")
    crews_sub.add_parser("list-types", parents=[parent_parser])
    crews_run = crews_sub.add_parser("run", parents=[parent_parser])
    crews_run.add_argument("--crew-type", required=True,
        choices=["ask", "data_engineering", "data_suggestion", "semantic_model"])
    crews_run.add_argument("--input", required=True, help="JSON string of task inputs")
    crews_result = crews_sub.add_parser("result", parents=[parent_parser])
    crews_result.add_argument("correlation_id")

    # -------------------------------------------------------------------------
    # Data Engineering commands
    # -------------------------------------------------------------------------
    dataeng_p = subparsers.add_parser("dataeng", parents=[parent_parser],
        help="Data engineering pipeline")
    dataeng_sub = dataeng_p.add_subparsers(dest="dataeng_command")

    dataeng_ask = dataeng_sub.add_parser("ask", parents=[parent_parser],
        help="Ask a data engineering question to generate a query")
    dataeng_ask.add_argument("--tables", required=True,
        help="Comma-separated fully-qualified table names")
    dataeng_ask.add_argument("--prompt", required=True, help="Natural language request")
    dataeng_ask.add_argument("--job-name", required=True, dest="job_name",
        help="Name for the generated job")
    dataeng_ask.add_argument("--federated", action="store_true",
        help="Enable federated query mode")
    dataeng_ask.add_argument("--preview", action="store_true",
        help="Preview mode (dry run)")

    dataeng_sched = dataeng_sub.add_parser("schedule", parents=[parent_parser],
        help="Schedule a data engineering query")
    dataeng_sched.add_argument("--table", required=True, help="Target table name")
    dataeng_sched.add_argument("--schema", required=True, dest="schema_name",
        help="Target schema name")
    dataeng_sched.add_argument("--mode", required=True,
        choices=["append", "overwrite", "merge"])
    dataeng_sched.add_argument("--query-id", dest="query_id", help="Query ID to schedule")
    dataeng_sched.add_argument("--schedule", help="Cron expression")
    dataeng_sched.add_argument("--merge-columns", dest="merge_columns",
        help="Columns for merge mode")
    dataeng_sched.add_argument("--domain", help="Domain URN")
    dataeng_sched.add_argument("--tags", help="Comma-separated tags")

    dataeng_upd = dataeng_sub.add_parser("update-query", parents=[parent_parser],
        help="Update the SQL of a generated query")
    dataeng_upd.add_argument("query_id", help="Query ID to update")
    dataeng_upd.add_argument("--query", required=True, help="New SQL string")
    
    # -------------------------------------------------------------------------
    # Profile management commands
    # -------------------------------------------------------------------------
    profile_p = subparsers.add_parser("profile", help="Manage profiles (~/.nx1/profiles)")
    profile_sub = profile_p.add_subparsers(dest="profile_command")
    profile_sub.add_parser("list", parents=[parent_parser], help="List all profiles")
    profile_sub.add_parser("path", parents=[parent_parser], help="Show profiles file path")
    profile_add = profile_sub.add_parser("add", help="Add/update a profile")
    profile_add.add_argument("--name", help="Profile name")
    profile_add.add_argument("--host", help="API host URL")
    profile_add.add_argument("--api-key", help="API key (PSK)")
    profile_add.add_argument("--no-verify-ssl", action="store_true", help="Disable SSL verification")
    profile_add.add_argument("--timeout", type=int, default=30, help="Request timeout")
    profile_add.add_argument("-o", "--output", choices=["json", "yaml", "table"], default="json")
    profile_rm = profile_sub.add_parser("remove", help="Remove a profile")
    profile_rm.add_argument("name", help="Profile name to remove")
    profile_show = profile_sub.add_parser("show", parents=[parent_parser], help="Show a profile")
    profile_show.add_argument("name", help="Profile name to show")

    # -------------------------------------------------------------------------
    # Airflow Triggerer commands
    # -------------------------------------------------------------------------
    airflow_p = subparsers.add_parser("airflow", parents=[parent_parser], help="Trigger Airflow DAGs")
    airflow_p.add_argument("--url", help="Airflow base URL")
    airflow_p.add_argument("--dag", help="DAG ID")
    airflow_p.add_argument("--username", help="Airflow username")
    airflow_p.add_argument("--password", help="Airflow password")
    airflow_p.add_argument("--conf", default="{}", help="DAG run config (JSON)")
    airflow_p.add_argument("--debug", action="store_true", help="Enable debug logging")

    # -------------------------------------------------------------------------
    # Kyuubi commands
    # -------------------------------------------------------------------------
    kyuubi_p = subparsers.add_parser("kyuubi", parents=[parent_parser], help="Submit Kyuubi batch job")
    kyuubi_p.add_argument("--server", help="Kyuubi server URL")
    kyuubi_p.add_argument("--history-server", help="Spark history server URL")
    kyuubi_p.add_argument("--username", help="Username")
    kyuubi_p.add_argument("--password", help="Password")
    kyuubi_p.add_argument('--token', help='Bearer token for authentication (if both --password and --token are provided, password takes priority)')
    kyuubi_p.add_argument("--resource", help="Jar / Py file")
    kyuubi_p.add_argument("--classname", help="Main class")
    kyuubi_p.add_argument("--name", help="Job name")
    kyuubi_p.add_argument("--queue", help="YuniKorn queue")
    kyuubi_p.add_argument("--args", help="Job arguments")
    kyuubi_p.add_argument("--conf", action="append", help="Spark config key=value (can be repeated, e.g. --conf k1=v1 --conf k2=v2)")
    kyuubi_p.add_argument("--pyfiles", help="PyFiles")
    kyuubi_p.add_argument("--jars", help="Jars")
    kyuubi_p.add_argument("--files", help="Files")
    kyuubi_p.add_argument("--show-logs", action="store_true")
    
    # -------------------------------------------------------------------------
    # Parse arguments
    # -------------------------------------------------------------------------
    args = parser.parse_args()
    resolve_config(args)

    if not args.command:
        parser.print_help()
        return
    
    # Setup logging
    if args.verbose:
        logging.basicConfig(level=logging.DEBUG, format='%(levelname)s: %(message)s')
    else:
        logging.basicConfig(level=logging.INFO, format='%(message)s')
    
    try:
        # Handle profile management commands first (don't need client)
        if args.command == "profile":
            _handle_profile_command(args)
            return
        
        # Create client with resolved configuration based on command
        if args.command == "airflow":
            result = _handle_airflow(args)
        elif args.command == "kyuubi":
            result = _handle_kyuubi(args)
        else:
            client = NX1Client(
                api_key=args.api_key,
                host=args.host,
                profile=args.profile,
                verify_ssl=False if args.no_verify_ssl else None,
                timeout=args.timeout
            )
            result = _execute_command(client, args)
        
        if result is not None:
            print(format_output(result, args.output))
    
    except NX1ValidationError as e:
        print(f"❌ Validation Error: {e}", file=sys.stderr)
        sys.exit(1)
    except NX1APIError as e:
        print(f"❌ API Error: {e}", file=sys.stderr)
        sys.exit(1)
    except NX1TimeoutError as e:
        print(f"⏱️ Timeout: {e}", file=sys.stderr)
        sys.exit(1)
    except FileNotFoundError as e:
        print(f"❌ File not found: {e}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        print("\n⚠️ Interrupted", file=sys.stderr)
        sys.exit(130)
    except Exception as e:
        print(f"❌ Error: {e}", file=sys.stderr)
        if hasattr(args, 'verbose') and args.verbose:
            import traceback
            traceback.print_exc()
        sys.exit(1)


def _handle_profile_command(args) -> None:
    """Handle profile management commands."""
    validate_required(args, ["name"])
    cmd = args.profile_command
    output_fmt = getattr(args, 'output', 'json')
    
    if cmd == "list" or not cmd:
        profiles = list_profiles()
        if not profiles:
            print(f"No profiles found. Create one with: nx1 profile add --name <n> --host <url> --api-key <key>")
            print(f"Profiles file: {get_profile_path()}")
            return
        # Hide API keys in output
        safe_profiles = {}
        for name, config in profiles.items():
            safe_config = dict(config)
            if "api_key" in safe_config:
                key = safe_config["api_key"]
                safe_config["api_key"] = key[:8] + "..." + key[-4:] if len(key) > 12 else "***"
            safe_profiles[name] = safe_config
        print(format_output(safe_profiles, output_fmt))
    
    elif cmd == "path":
        print(get_profile_path())
    
    elif cmd == "add":
        save_profile(
            profile_name=args.name,
            host=args.host,
            api_key=args.api_key,
            verify_ssl=not args.no_verify_ssl,
            timeout=args.timeout
        )
        print(f"✅ Profile '{args.name}' saved to {get_profile_path()}")
    
    elif cmd == "remove":
        if delete_profile(args.name):
            print(f"✅ Profile '{args.name}' removed")
        else:
            print(f"❌ Profile '{args.name}' not found")
    
    elif cmd == "show":
        from nx1_sdk.profiles import get_profile
        profile_config = get_profile(args.name)
        safe_config = dict(profile_config)
        if "api_key" in safe_config:
            key = safe_config["api_key"]
            safe_config["api_key"] = key[:8] + "..." + key[-4:] if len(key) > 12 else "***"
        print(format_output(safe_config, output_fmt))


def _execute_command(client: NX1Client, args) -> Optional[Any]:
    """Execute the requested command and return result."""
    
    # Health commands
    if args.command == "ping":
        return client.health.ping()
    elif args.command == "version":
        print(client.health.version())
        return None
    
    # Metastore commands
    elif args.command == "domains":
        return client.metastore.get_domains()
    elif args.command == "catalogs":
        return client.metastore.get_catalogs()
    elif args.command == "schemas":
        validate_required(args, ["catalog"])
        return client.metastore.get_schemas(args.catalog)
    elif args.command == "tables":
        validate_required(args, ["catalog","schema"])
        return client.metastore.get_tables(args.catalog, args.schema)
    elif args.command == "columns":
        validate_required(args, ["catalog","schema","table"])
        return client.metastore.get_columns(args.catalog, args.schema, args.table)
    elif args.command == "catalogs-details":
        return client.metastore.get_catalogs_details()
    elif args.command == "schemas-details":
        validate_required(args, ["catalog"])
        return client.metastore.get_schemas_details(args.catalog)
    elif args.command == "tables-details":
        validate_required(args, ["catalog","schema"])
        return client.metastore.get_tables_details(args.catalog, args.schema)
    elif args.command == "table-preview":
        validate_required(args, ["catalog","schema","table"])
        return client.metastore.get_table_preview(args.catalog, args.schema, args.table, args.limit)
    elif args.command == "table-metadata":
        validate_required(args, ["catalog","schema","table"])
        return client.metastore.get_table_metadata(args.catalog, args.schema, args.table)
    elif args.command == "table-details":
        validate_required(args, ["catalog","schema","table"])
        return client.metastore.get_table_details(args.catalog, args.schema, args.table)
    elif args.command == "tags":
        return client.metastore.get_tags()
    elif args.command == "engines":
        return client.metastore.get_engines()
    elif args.command == "tag-associations":
        return client.metastore.get_tag_associations()
    elif args.command == "create-tag-role":
        return client.metastore.create_tag_role_association(
            args.tag, args.role, readonly=args.readonly
        )
    elif args.command == "delete-tag-role":
        return client.metastore.delete_tag_role_association(args.tag, args.role)
    elif args.command == "create-catalog":
        validate_required(args, ["catalog", "type", "properties"])
        properties = json.loads(args.properties)
        return client.metastore.create_catalog(args.catalog, args.type, properties)
    elif args.command == "delete-catalog":
        validate_required(args, ["catalog"])
        response = client.metastore.delete_catalog(args.catalog)
        if response.get("success"):
            print(f"✔ Catalog '{args.catalog}' deleted successfully.")
            return None
        return response
    elif args.command == "create-schema":
        validate_required(args, ["catalog", "schema"])
        properties = json.loads(args.properties) if args.properties else {}
        return client.metastore.create_schema(args.catalog, args.schema, properties)
    elif args.command == "delete-schema":
        validate_required(args, ["catalog", "schema"])
        response = client.metastore.delete_schema(args.catalog, args.schema)
        if response.get("success"):
            print(f"✔ Schema '{args.catalog}.{args.schema}' deleted successfully.")
            return None
        return response
    elif args.command == "create-table":
        validate_required(args, ["catalog", "schema", "table", "columns"])
        columns = json.loads(args.columns)
        properties = json.loads(args.properties) if args.properties else {}
        return client.metastore.create_table(args.catalog, args.schema, args.table, columns, properties)
    elif args.command == "delete-table":
        validate_required(args, ["catalog", "schema", "table"])
        response = client.metastore.delete_table(args.catalog, args.schema, args.table)
        if response.get("success"):
            print(f"✔ Table '{args.catalog}.{args.schema}.{args.table}' deleted successfully.")
            return None
        return response
    elif args.command == "alter-table":
        validate_required(args, ["catalog", "schema", "table", "operations"])
        operations = json.loads(args.operations)
        return client.metastore.alter_table(args.catalog, args.schema, args.table, operations)
    
    # Query commands
    elif args.command == "ask":
        validate_required(args, ["domain","prompt"])
        return client.queries.ask(args.domain, args.prompt)
    elif args.command == "suggest":
        validate_required(args, ["domain"])
        return client.queries.suggest(args.domain)
    elif args.command == "query":
        return _handle_query(client, args)
    
    # Ingest local file
    elif args.command == "ingest-file":
        return _handle_ingest_file(client, args)
    
    # Direct ingestion
    elif args.command == "ingest":
        return _handle_ingest(client, args)
    
    elif args.command == "ingest-options":
        return client.ingestion.get_file_ingestion_options()
    
    # Jobs commands
    elif args.command == "jobs":
        return _handle_jobs(client, args)
    
    # Files commands
    elif args.command == "files":
        return _handle_files(client, args)
    
    # S3 commands
    elif args.command == "s3":
        return _handle_s3(client, args)
    
    # DQ commands
    elif args.command == "dq":
        return _handle_dq(client, args)
    
    # Data Products commands
    elif args.command == "dataproducts":
        return _handle_dataproducts(client, args)
    
    # Apps commands
    elif args.command == "apps":
        return _handle_apps(client, args)
    
    # Mirror commands
    elif args.command == "mirror":
        return _handle_mirror(client, args)
    
    # Shares commands
    elif args.command == "shares":
        return _handle_shares(client, args)
    
    # Crews commands
    elif args.command == "crews":
        return _handle_crews(client, args)

    # Data Engineering commands
    elif args.command == "dataeng":
        return _handle_dataeng(client, args)
    
    return None


def _handle_ingest_file(client: NX1Client, args) -> None:
    """Handle ingest-file command."""
    validate_required(args, ["file_path", "table", "schema_name"])
    transformations = []
    if args.cast:
        for c in args.cast:
            for item in c.split(','):
                col, dtype = item.strip().split(':', 1)
                transformations.append(ColumnTransformation.cast(col.strip(), dtype.strip()))
    
    if args.rename:
        for r in args.rename:
            for item in r.split(','):
                old, new = item.strip().split(':', 1)
                transformations.append(ColumnTransformation.rename(old.strip(), new.strip()))
    
    if args.encrypt:
        for e in args.encrypt:
            for col in e.split(','):
                transformations.append(ColumnTransformation.encrypt(col.strip()))
    
    merge_keys = args.merge_keys.split(",") if args.merge_keys else None
    tags = args.tags.split(",") if args.tags else None
    domain = getattr(args, 'ingest_domain', None)
    
    job_id = client.ingestion.ingest_local_file(
        file_path=args.file_path,
        table=args.table,
        schema_name=args.schema_name,
        mode=args.mode,
        merge_keys=merge_keys,
        column_transformations=transformations if transformations else None,
        job_name=args.job_name,
        header=args.header,
        delimiter=args.delimiter,
        domain=domain,
        tags=tags,
        wait_for_completion=not args.no_wait,
        max_wait=args.max_wait,
        verbose=True
    )
    print(f"\n🎉 Pipeline completed! Job ID: {job_id}")
    return None


def _handle_ingest(client: NX1Client, args) -> None:
    """Handle ingest command."""
    validate_required(args, ["name","table","schema_name"])
    file_opts = {"header": args.header, "inferSchema": "true", "delimiter": args.delimiter}
    merge_keys = args.merge_keys.split(",") if args.merge_keys else None
    tags = args.tags.split(",") if args.tags else None
    domain = getattr(args, 'ingest_domain', None)
    
    result = client.ingestion.submit(
        name=args.name,
        ingesttype=args.ingesttype,
        schema_name=args.schema_name,
        table=args.table,
        mode=args.mode,
        file_path=args.file_path,
        file_id=args.file_id,
        file_format=args.file_format,
        file_read_options=file_opts,
        merge_keys=merge_keys,
        domain=domain,
        tags=tags,
        schedule=args.schedule
    )
    print(f"Job ID: {result.get('job_id')}, Flow URL: {result.get('flow_url', 'N/A')}")
    return None

def _handle_query(client: NX1Client, args) -> Optional[Any]:
    """Handle query sub-commands."""
    cmd = args.query_command
    if cmd == "list" or not cmd:
        return client.queries.get_queries(getattr(args, "limit", 20))
    elif cmd == "delete":
        validate_required(args, ["query_id"])
        client.queries.delete_query(args.query_id)
        print(f"✅ Deleted query:{args.query_id}")
    elif cmd == "create":
        result = client.queries.create_from_suggestion(args.suggestion_id)
        print(f"✅ Query created from suggestion")
        return result
    elif cmd == "submit":
        result = client.queries.submit(args.query, getattr(args, "domain", None))
        print(f"✅ Query submitted")
        return result
    elif cmd == "schedule":
        result = client.queries.schedule(
            name=args.name,
            cron=args.cron,
            card_url=getattr(args, "card_url", None),
            query_id=getattr(args, "query_id", None)
        )
        print(f"✅ Scheduled:{result.get('id')}")
        return result
    elif cmd == "embed-token":
        token = client.queries.get_embed_token(args.query_id)
        print(token)
        return None
    return None


def _handle_jobs(client: NX1Client, args) -> Optional[Any]:
    """Handle jobs commands."""
    cmd = args.jobs_command
    if cmd in ("get","delete","trigger","wait"):
        validate_required(args, ["job_id"])
    if cmd == "list" or not cmd:
        return client.jobs.get_all()
    elif cmd == "get":
        return client.jobs.get(args.job_id)
    elif cmd == "delete":
        client.jobs.delete(args.job_id)
        print(f"✅ Deleted: {args.job_id}")
    elif cmd == "trigger":
        client.jobs.trigger(args.job_id)
        print(f"✅ Triggered: {args.job_id}")
    elif cmd == "wait":
        result = client.jobs.wait_for_completion(args.job_id, args.max_wait, args.poll_interval)
        print(f"✅ Completed: {result.get('status')}")
        return result
    elif cmd == "create":
        result = client.jobs.create(args.job_name, args.job_type,
                                    schedule=getattr(args, "schedule", None))
        print(f"✅ Job created:{result.get('id')}")
        return result
    elif cmd == "update-status":
        validate_required(args, ["job_id"])
        result = client.jobs.update_status(
            args.job_id,
            args.status,
            status_message=getattr(args, "status_message", None)
        )
        print(f"✅ Status updated to{args.status}")
        return result
    return None


def _handle_files(client: NX1Client, args) -> Optional[Any]:
    """Handle files commands."""
    cmd = args.files_command
    if cmd in ("get","delete"):
        validate_required(args, ["file_id"])
    if cmd == "list" or not cmd:
        return client.files.get_all()
    elif cmd == "upload":
        validate_required(args, ["file_path","name"])
        result = client.files.upload(args.file_path, args.name)
        print(f"✅ Uploaded: {result.get('id')}, S3: {result.get('s3_url')}")
    elif cmd == "upload-url":
        validate_required(args, ["url","name"])
        result = client.files.upload_from_url(args.url, args.name)
        print(f"✅ Uploaded: {result.get('id')}, S3: {result.get('s3_url')}")
    elif cmd == "get":
        return client.files.get(args.file_id)
    elif cmd == "delete":
        client.files.delete(args.file_id)
        print(f"✅ Deleted: {args.file_id}")
    elif cmd == "download":
        validate_required(args, ["file_id"])
        content = client.files.download(args.file_id)
        output_path = getattr(args, "output_path", None) or args.file_id
        with open(output_path, "wb") as fh:
            fh.write(content)
        print(f"✅ Downloaded to:{output_path}")
    return None


def _handle_s3(client: NX1Client, args) -> Optional[Any]:
    """Handle s3 commands."""
    cmd = args.s3_command
    if cmd in ("get","delete"):
        validate_required(args, ["bucket_name"])
    if cmd == "list" or not cmd:
        return client.s3.get_buckets()
    elif cmd == "refresh":
        client.s3.refresh()
        print("✅ Refreshed")
    elif cmd == "get":
        return client.s3.get_bucket(args.bucket_name)
    elif cmd == "create":
        validate_required(args, ["bucket","endpoint","access_key","secret_key"])
        client.s3.create_bucket(args.bucket, args.endpoint, args.access_key, args.secret_key)
        print(f"✅ Created: {args.bucket}")
    elif cmd == "delete":
        client.s3.delete_bucket(args.bucket_name)
        print(f"✅ Deleted: {args.bucket_name}")
    return None


def _handle_dq(client: NX1Client, args) -> Optional[Any]:
    """Handle dq commands."""
    cmd = args.dq_command
    if cmd == "suggest":
        return client.data_quality.suggest(args.table, getattr(args, 'request', None))
    elif cmd == "rules":
        return client.data_quality.get_rules_by_table(args.table, args.accepted_only)
    elif cmd == "run":
        return client.data_quality.run_report_by_table(args.table)
    elif cmd == "accept":
        client.data_quality.accept(args.dq_id)
        print(f"✅ Accepted: {args.dq_id}")
    elif cmd == "delete":
        client.data_quality.delete_rule(args.dq_id)
        print(f"✅ Deleted: {args.dq_id}")
    return None


def _handle_dataproducts(client: NX1Client, args) -> Optional[Any]:
    """Handle dataproducts commands."""
    cmd = args.dp_command
    if cmd == "list" or not cmd:
        return client.data_products.get_all()
    elif cmd == "delete":
        client.data_products.delete(args.dataproduct_id)
        print(f"✅ Deleted")
    return None


def _handle_apps(client: NX1Client, args) -> Optional[Any]:
    """Handle apps commands."""
    cmd = args.apps_command
    if cmd == "list" or not cmd:
        return client.apps.get_all()
    elif cmd == "create":
        result = client.apps.create(args.name)
        print(f"✅ Created: {result.get('id')}")
        return result
    elif cmd == "get":
        return client.apps.get(args.app_id)
    elif cmd == "update":
        result = client.apps.update(args.app_id, args.name)
        print(f"✅ Updated:{args.app_id}")
        return result
    elif cmd == "delete":
        client.apps.delete(args.app_id)
        print(f"✅ Deleted:{args.app_id}")
    elif cmd == "versions":
        return client.apps.get_versions(args.app_id)
    elif cmd == "create-version":
        result = client.apps.create_version(args.app_id, args.name)
        print(f"✅ Version created: {result.get('id')}")
        return result
    elif cmd == "delete-version":
        client.apps.delete_version(args.version_id)
        print(f"✅ Version deleted:{args.version_id}")
    elif cmd == "activate":
        client.apps.activate_version(args.version_id)
        print(f"✅ Activated:{args.version_id}")
    elif cmd == "roles":
        return client.apps.get_roles(args.app_id)
    elif cmd == "create-role":
        result = client.apps.create_role(args.app_id, args.name)
        print(f"✅ Role created: {result.get('id')}")
        return result
    elif cmd == "delete-role":
        client.apps.delete_role(args.app_id, args.role_id)
        print(f"✅ Role deleted:{args.role_id}")
    elif cmd == "components":
        return client.apps.get_components(args.version_id)
    elif cmd == "add-dag":
        result = client.apps.add_dag(args.version_id, args.file, args.name)
        print(f"✅ DAG added: {result.get('id')}")
        return result
    elif cmd == "add-artifact":
        result = client.apps.add_artifact(args.version_id, args.file,
                                           getattr(args, "name", None))
        print(f"✅ Artifact added:{result.get('id')}")
        return result
    elif cmd == "delete-component":
        client.apps.delete_component(args.component_id)
        print(f"✅ Component deleted:{args.component_id}")
    elif cmd == "deploy":
        return _handle_apps_deploy(client, args)
    return None


def _handle_apps_deploy(client: NX1Client, args) -> Optional[Any]:
    """Handle full app deployment: create/find app, create version, upload components, activate."""
    app_name = args.app_name
    version = args.version

    # Find or create the app
    apps = client.apps.get_all()
    existing = [a for a in apps if a['app_name'] == app_name]
    if existing:
        app_id = existing[0]['id']
        print(f"App '{app_name}' exists (id: {app_id})")
    else:
        print(f"App '{app_name}' not found. Creating...")
        result = client.apps.create(app_name)
        app_id = result['id']
        print(f"✅ App created (id: {app_id})")

    # Check version doesn't already exist
    versions = client.apps.get_versions(app_id)
    if version in [v['version_name'] for v in versions]:
        print(f"Version '{version}' already exists. Exiting.")
        sys.exit(1)

    # Create version
    version_result = client.apps.create_version(app_id, version)
    version_id = version_result['id']
    print(f"✅ Version '{version}' created (id: {version_id})")

    # Upload artifacts
    if args.artifacts:
        for artifact_path in args.artifacts.split(','):
            artifact_path = artifact_path.strip()
            print(f"Uploading artifact: {artifact_path}")
            client.apps.add_component(version_id, "artifact", artifact_path)
            print(f"✅ Artifact added: {artifact_path}")

    # Upload DAGs
    if args.dags:
        for dag_path in args.dags.split(','):
            dag_path = dag_path.strip()
            print(f"Uploading DAG: {dag_path}")
            client.apps.add_dag(version_id, dag_path)
            print(f"✅ DAG added: {dag_path}")

    # Activate version
    client.apps.activate_version(version_id)
    print(f"✅ Version '{version}' activated")
    return None


def _handle_mirror(client: NX1Client, args) -> Optional[Any]:
    cmd = args.mirror_command
    if cmd == "create" or not cmd:
        validate_required(args, ["name", "dbtype", "include_list", "host_name",
                                  "port", "user", "password", "dbname"])
        result = client.mirroring.create(
            job_name=args.name,
            dbtype=args.dbtype,
            include_list=args.include_list,
            host_name=args.host_name,
            port=args.port,
            user=args.user,
            password=args.password,
            dbname=args.dbname,
            schemas=getattr(args, "schemas", None),
            schedule=getattr(args, "schedule", None),
        )
        print(f"✅ Mirroring job created:{result.get('id')}")
        return result
    elif cmd == "delete":
        client.mirroring.delete(args.job_id)
        print(f"✅ Mirroring job deleted:{args.job_id}")
    return None


def _handle_shares(client: NX1Client, args) -> Optional[Any]:
    """Handle shares commands."""
    cmd = args.shares_command
    if cmd in ("get","delete"):
        validate_required(args, ["share_id"])
    if cmd == "list" or not cmd:
        return client.data_shares.get_all()
    elif cmd == "get":
        return client.data_shares.get(args.share_id)
    elif cmd == "delete":
        client.data_shares.delete(args.share_id)
        print(f"✅ Deleted")
    return None


def _handle_crews(client, args):
    cmd = args.crews_command
    if cmd == "list-types":
        return client.crews.list_crew_types()
    elif cmd == "run":
        task_input = json.loads(args.input)
        return client.crews.run_crew(args.crew_type, task_input)
    elif cmd == "result":
        return client.crews.get_crew_result(args.correlation_id)
    
def _handle_dataeng(client: NX1Client, args) -> Optional[Any]:
    """Handle dataeng sub-commands."""
    cmd = args.dataeng_command
    if cmd == "ask":
        tables = [t.strip() for t in args.tables.split(",")]
        return client.data_engineering.ask(
            tables=tables,
            prompt=args.prompt,
            job_name=args.job_name,
            federated=args.federated,
            preview=args.preview,
        )
    elif cmd == "schedule":
        tags = args.tags.split(",") if args.tags else None
        return client.data_engineering.schedule(
            table=args.table,
            schema_name=args.schema_name,
            mode=args.mode,
            query_id=getattr(args, "query_id", None),
            schedule=getattr(args, "schedule", None),
            merge_columns=getattr(args, "merge_columns", None),
            domain=getattr(args, "domain", None),
            tags=tags,
        )
    elif cmd == "update-query":
        return client.data_engineering.update_query(args.query_id, args.query)
    return None

def _handle_airflow(args):
    validate_required(args, ["url", "username", "dag"])

    password = get_password(
        args,
        args.username,
        env_var="AIRFLOW_TRIGGER_PASSWORD",
    )

    conf_dict = json.loads(getattr(args, "conf", "{}"))

    client = AirflowTriggererClient(
        airflow_url=args.url,
        username=args.username,
        password=password,
    )

    dag_run_id = client.trigger_dag(args.dag, conf_dict)
    final_state = client.monitor_dag(args.dag, dag_run_id)

    return {
        "dag_run_id": dag_run_id,
        "final_state": final_state,
    }


def _handle_kyuubi(args):
    validate_required(args, ["server", "username", "resource", "name"])
    inject_yunikorn_spark_configs(args)
    token = args.token or os.environ.get('KYUUBI_SUBMIT_TOKEN')
    password = get_password(
        args,
        args.username,
        env_var="KYUUBI_SUBMIT_PASSWORD",
    )
    if not password and not token:
        password = getpass.getpass(f"Token not provided. Provide password for {args.username}: ")
    
    logger = logging.getLogger("kyuubi-submit")

    submitter = KyuubiBatchSubmitterClient(
        server=args.server,
        username=args.username,
        password=password,
        logger=logger,
        history_server=getattr(args, "history_server", None),
        token=getattr(args, "token", None) if not password else None,
    )

    batch_id = submitter.submit_batch(
        resource=args.resource,
        classname=getattr(args, "classname", None),
        name=args.name,
        args=getattr(args, "args", None),
        conf=getattr(args, "conf", None),
        py_files=getattr(args, "pyfiles", None),
        jars=getattr(args, "jars", None),
        files=getattr(args, "files", None),
    )

    final_state = submitter.monitor_job(
        batch_id,
        show_logs=getattr(args, "show_logs", False),
    )

    return {
        "batch_id": batch_id,
        "final_state": final_state,
    }

if __name__ == "__main__":
    main()
