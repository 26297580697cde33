--liquibase formatted sql

--changeset ctxasm:ora-pkg-ctx-json-spec dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package ctx_json authid definer is
   /**
    * Small readers of JSON_OBJECT_T / JSON_ARRAY_T values that give what PostgreSQL's jsonb operators give
    * (->> of a member or an element, a member as a number or an object, keys in jsonb's order), and the small
    * format helpers of the assembly packages and CTX_TOOLS: timestamps as PostgreSQL writes them, vector text,
    * a list of texts. Engine-internal: PostgreSQL has these as operators and casts; never granted to
    * CTXASM_APP. Pure functions: they read no table and write nothing.
    */

   -- the empty JSON array, as CTX_ASSEMBLY writes its lists
   co_empty_array constant varchar2(2) := '[]';
   -- a row version as refs write it in JSON (text): 1 to 9 digits
   co_version_pattern constant varchar2(30) := '^[0123456789]{1,9}$';

   type t_key_tab is table of varchar2(32767);
   -- a list of texts (a question's words, slice names)
   type t_text_tab is table of varchar2(32767);

   /** PostgreSQL's ->> of one member: a string unquoted, another value as JSON text, NULL for null or absent. */
   function member_text(in_object in json_object_t, in_key in varchar2) return varchar2;

   /** One member as canonical JSON text (objects with their keys sorted), NULL when absent. */
   function canonical_member(in_object in json_object_t, in_key in varchar2) return clob;

   /**
    * Two JSON arrays written without white space around their brackets, as one; NULL counts as the empty
    * array.
    */
   function array_union(in_first in clob, in_second in clob) return clob;

   /**
    * The keys of a JSON object, sorted: alphabetically (in_by_length false) or as PostgreSQL's jsonb keeps
    * them, by length and then by bytes.
    */
   function sorted_keys(in_object in json_object_t, in_by_length in boolean) return t_key_tab;

   /** The keys of a JSON object in alphabetical order, joined with ', ', at most 4,000 characters. */
   function listed_keys(in_object in json_object_t) return varchar2;

   /** A member of a JSON object as a number, NULL when the object is NULL or the member absent or no number. */
   function number_member(in_object in json_object_t, in_key in varchar2) return number;

   /** A member of a JSON object as an object, NULL when the object is NULL or the member absent or no object. */
   function object_member(in_object in json_object_t, in_key in varchar2) return json_object_t;

   /** The member in_key of in_value when in_value is an object, else NULL. */
   function member_of(in_value in json_element_t, in_key in varchar2) return json_element_t;

   /** PostgreSQL's ->> of one element of an array: a string unquoted, another value as JSON text. */
   function element_text(in_ref in json_array_t, in_index in pls_integer) return varchar2;

   /** Whether in_list holds in_text (a NULL in_text is never held). */
   function is_listed(in_list in t_text_tab, in_text in varchar2) return boolean;

   /**
    * A timestamp as ISO 8601 in UTC, fractional seconds without trailing zeros, offset '+00:00'
    * (the text PostgreSQL gives a timestamptz in JSON in a UTC session).
    */
   function iso_utc(in_timestamp in timestamp with time zone) return varchar2 deterministic;

   /** A timestamp as PostgreSQL writes a timestamptz in a UTC session, for messages: 2026-01-01 00:00:00+00. */
   function message_time(in_timestamp in timestamp with time zone) return varchar2;

   /**
    * Whether in_text is vector text '[x, y, ...]' of in_dimensions numbers, each plain or with an exponent
    * (as PostgreSQL's vector input accepts them): how CTX_ASSEMBLY and CTX_TOOLS check a query embedding.
    */
   function is_vector_text(in_text in clob, in_dimensions in pls_integer) return boolean;
end ctx_json;
/
