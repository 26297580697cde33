--liquibase formatted sql

--changeset ctxasm:ora-pkg-ctx-json-spec dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package ctx_json authid definer is
   /**
    * Small readers of JSON_OBJECT_T / JSON_ARRAY_T values that give what PostgreSQL's jsonb operators give
    * (->> of a member or an element, a member as a number or an object, keys in jsonb's order), for CTX_ASSEMBLY.
    * Engine-internal: PostgreSQL has these as operators; never granted to CTXASM_APP. Pure functions: they read
    * no table and write nothing.
    */

   -- the empty JSON array, as CTX_ASSEMBLY writes its lists
   co_empty_array constant varchar2(2) := '[]';

   type t_key_tab is table of varchar2(32767);

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
end ctx_json;
/
